# From ../shared/reference/launch-examples.md D4a (vLLM docs kv_offloading_usage.md).
# The <model> placeholder is filled in.
vllm serve Qwen/Qwen3-0.6B \
  --kv-transfer-config '{
    "kv_connector": "OffloadingConnector",
    "kv_role": "kv_both",
    "kv_connector_extra_config": {
      "block_size": 64,
      "cpu_bytes_to_use": 1000000000
    }
  }'
