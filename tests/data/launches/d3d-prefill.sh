# From ../shared/reference/launch-examples.md D3d (llm-d pd-disaggregation patch-prefill.yaml; container command + args).
vllm serve openai/gpt-oss-120b --disable-access-log-for-endpoints=/health,/metrics,/v1/models \
  --tensor-parallel-size=1 --block-size=128 \
  --kv-transfer-config '{"kv_connector":"NixlConnector", "kv_role":"kv_producer"}' \
  --no-disable-hybrid-kv-cache-manager --gpu-memory-utilization=0.9
