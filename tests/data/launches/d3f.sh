# From ../shared/reference/launch-examples.md D3f (kserve nemotron-3-ultra-pd.yaml prefill: the template's `vllm serve /mnt/models --port 8000` with VLLM_ADDITIONAL_ARGS).
VLLM_PREFIX_CACHE_RETENTION_INTERVAL=0 \
VLLM_SSM_CONV_STATE_LAYOUT=DS \
VLLM_HTTP_TIMEOUT_KEEP_ALIVE=120 \
vllm serve /mnt/models --port 8000 \
      --trust-remote-code \
      --tensor-parallel-size=8 \
      --enable-expert-parallel \
      --kv-cache-dtype=fp8 \
      --enable-prefix-caching \
      --enable-auto-tool-choice \
      --tool-call-parser=qwen3_coder \
      --reasoning-parser=nemotron_v3 \
      --enable-log-requests \
      --enable-log-outputs \
      --model-loader-extra-config '{"enable_multithread_load": true, "num_threads": 96}' \
      --kv-transfer-config '{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_load_failure_policy":"fail","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_connector_extra_config":{"bidirectional_kv_xfer":true}},{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":214748364800,"lazy_offload":true}}]}}'
