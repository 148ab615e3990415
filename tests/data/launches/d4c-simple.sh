# From ../shared/reference/launch-examples.md D4c (vllm-project/recipes taxonomy.yaml offload preset 'simple', appended last-wins to a single-node command).
vllm serve Qwen/Qwen3-0.6B --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' \
  --kv-transfer-config '{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use_per_rank":236223201280,"lazy_offload":false}}'
