"""Capacity: will the weights and the KV cache fit on the GPU a role declares (docs/CAPACITY.md, issue 32).

weights.py counts the weights; kv.py builds the KV cache as vLLM does per release; estimates say they are
estimates and show their inputs."""
