"""What the environment variables a vLLM server reads do: vLLM's own, and those of the libraries it loads.

The `VLLM_*` texts come from the comments in `vllm/envs.py` and the connector code at 0.33.0
(/work/shared/reference/vllm-facts.md section 2.4); the list of names each release knows is `envs.py`.
"""

from __future__ import annotations

from profilekit.vllm.envs import PREFIX, known_env_names

# variables that change a vLLM server's effective configuration (model runner, KV connectors, offload, side
# channels, plugins, parallel start-up)
VLLM_EFFECTS = {
    "VLLM_USE_V2_MODEL_RUNNER": "picks Model Runner V2 (1) or V1 (0); unset, vLLM decides from the config",
    "VLLM_PLUGINS": "names the plugins vLLM loads, comma-separated (unset: all of them; empty: none)",
    "VLLM_NIXL_SIDE_CHANNEL_HOST": "host of the NIXL handshake between prefill and decode (default localhost)",
    "VLLM_NIXL_SIDE_CHANNEL_PORT": "port of the NIXL handshake (default 5600, plus the data-parallel rank)",
    "VLLM_P2P_SIDE_CHANNEL_HOST": "address the P2P KV-offload control socket binds to (default localhost)",
    "VLLM_P2P_SIDE_CHANNEL_PORT": "port the P2P KV-offload control socket binds to (default 5710)",
    "VLLM_MOONCAKE_BOOTSTRAP_PORT": "port of the Mooncake handshake between remote agents (default 8998)",
    "VLLM_USE_SIMPLE_KV_OFFLOAD": "native KV offload uses SimpleCPUOffloadConnector",
    "VLLM_KV_OFFLOAD_MAX_BATCH_DESCRIPTORS": "descriptors per CPU KV-offload batch copy (0: platform default)",
    "VLLM_KV_CACHE_LAYOUT": "the KV cache layout (NHD, HND, ...); unset, the attention backend chooses",
    "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION": "no random suffix on request IDs (KV connectors that match IDs)",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "runs the engine core in its own process",
    "VLLM_WORKER_MULTIPROC_METHOD": "how workers start: spawn or fork",
    "VLLM_HOST_IP": "this node's IP address for distributed start-up (set per node)",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "allows a max_model_len longer than the model's config says",
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "allows pickle between processes",
    "VLLM_USE_DEEP_GEMM": "allows DeepGEMM kernels for fused MoE",
    "VLLM_API_KEY": "the API key the server requires from clients",
}
OTHER_EFFECTS = {
    "PYTORCH_CUDA_ALLOC_CONF": "PyTorch's CUDA allocator settings; expandable_segments:True is refused with any "
    "KV connector unless the cumem allocator is on",
    "CUDA_VISIBLE_DEVICES": "the GPUs the process sees, and their order (tensor parallel ranks use the first N)",
    "LMCACHE_CONFIG_FILE": "LMCache's configuration file; the LMCACHE_* variables override it",
}
# families of variables read by a library vLLM loads, by prefix
PREFIX_EFFECTS = {
    "LMCACHE_": "read by LMCache (LMCache connectors, --kv-offloading-backend lmcache): overrides its config",
    "UCX_": "read by UCX, the transport NIXL moves KV blocks over in P/D (not read by vLLM itself)",
}


def is_relevant(name: str) -> bool:
    """Whether a variable in the environment can change a vLLM server's effective configuration."""
    return name.startswith((PREFIX, *PREFIX_EFFECTS)) or name in OTHER_EFFECTS


def describe(name: str, version: str) -> str:
    """What `name` does to a vLLM `version` server ("" for a `VLLM_*` name that release does not know)."""
    if name in VLLM_EFFECTS or name in OTHER_EFFECTS:
        return VLLM_EFFECTS.get(name) or OTHER_EFFECTS[name]
    if name.startswith(PREFIX):
        known = known_env_names(version)
        return f"read by vLLM {version} (see its vllm/envs.py)" if known is None or name in known else ""
    for prefix, text in PREFIX_EFFECTS.items():
        if name.startswith(prefix):
            return text
    return ""
