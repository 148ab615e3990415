# From ../shared/reference/launch-examples.md D4f (third-party guides).
vllm serve /models/Qwen3-4B --kv-offloading-size 16 --kv-offloading-backend native --enable-prefix-caching
