# From ../shared/reference/launch-examples.md D4e (vLLM examples disagg_vllm_launcher.sh, prefiller).
export PYTHONHASHSEED=${VLLM_PYTHON_HASH_SEED:-123}
UCX_TLS=cuda_ipc,cuda_copy,tcp \
    LMCACHE_CONFIG_FILE=$prefill_config_file \
    LMCACHE_USE_EXPERIMENTAL=True \
    VLLM_ENABLE_V1_MULTIPROCESSING=1 \
    VLLM_WORKER_MULTIPROC_METHOD=spawn \
    CUDA_VISIBLE_DEVICES=0 \
    vllm serve $MODEL \
    --port 8100 \
    --enforce-eager \
    --no-enable-prefix-caching \
    --kv-transfer-config \
    '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_producer","kv_connector_extra_config": {"discard_partial_chunks": false, "lmcache_rpc_port": "producer1"}}'
