"""Render a composed stack into the files that start it: launch scripts, env files, `up.sh`, `vllm serve --config`
files, Kubernetes manifests, a SLURM batch job; team templates in a Jinja sandbox. Nothing here touches disk."""
