# From ../shared/reference/launch-examples.md D3d (llm-d pd-disaggregation patch-decode.yaml; container command + args).
vllm serve openai/gpt-oss-120b --disable-access-log-for-endpoints=/health,/metrics,/v1/models \
  --tensor-parallel-size=4 --block-size=128 \
  --kv-transfer-config '{"kv_connector":"NixlConnector", "kv_role":"kv_both"}' \
  --no-disable-hybrid-kv-cache-manager --port=8200 --shutdown-timeout=60
