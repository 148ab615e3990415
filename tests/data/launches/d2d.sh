# From ../shared/reference/launch-examples.md D2d (vllm-project/recipes Nemotron-Nano-9B-v2; vLLM 0.33.0 has no --tool-call-parser-plugin).
vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 \
  --trust-remote-code \
  --max-model-len 131072 \
  --tensor-parallel-size 1 \
  --enable-auto-tool-choice \
  --tool-call-parser-plugin nemotron_toolcall_parser_no_streaming.py \
  --tool-call-parser nemotron_json
