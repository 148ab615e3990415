# From ../shared/reference/launch-examples.md D2e (third-party flag reference).
vllm serve /models/Nemotron-H-8B --use-replayssm --mamba-backend triton --enable-prefix-caching --mamba-cache-mode align
