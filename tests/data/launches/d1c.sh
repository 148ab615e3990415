# From ../shared/reference/launch-examples.md D1c (vLLM docs serve_args.md).
vllm serve --config d1c-config.yaml
# precedence: command line > config file values > defaults
