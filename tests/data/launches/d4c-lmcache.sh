# From ../shared/reference/launch-examples.md D4c (vllm-project/recipes taxonomy.yaml offload preset 'lmcache', appended last-wins to a single-node command).
vllm serve Qwen/Qwen3-0.6B --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' \
  --kv-transfer-config '{"kv_connector":"LMCacheMPConnector","kv_role":"kv_both","kv_connector_extra_config":{"lmcache.mp.port":5555,"lmcache.mp.mq_timeout":300}}'
