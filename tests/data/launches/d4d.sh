# From ../shared/reference/launch-examples.md D4d (vLLM examples cpu_offload_lmcache.py env, Dynamo agg_lmcache.sh flags).
LMCACHE_USE_EXPERIMENTAL=True \
LMCACHE_CHUNK_SIZE=256 \
LMCACHE_LOCAL_CPU=True \
LMCACHE_MAX_LOCAL_CPU_SIZE=5.0 \
vllm serve meta-llama/Meta-Llama-3.1-8B-Instruct \
  --max-model-len 8000 --gpu-memory-utilization 0.8 \
  --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'
