# From ../shared/reference/launch-examples.md D1a (vLLM quickstart).
vllm serve Qwen/Qwen2.5-1.5B-Instruct
