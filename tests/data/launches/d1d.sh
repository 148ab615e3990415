# From ../shared/reference/launch-examples.md D1d (vLLM recipes converter; `source env.sh` left out: it cannot be represented).
vllm serve --config d1d-config.yml
