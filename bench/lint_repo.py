"""Generate a profile repository of realistic shape for the `lint` speed benchmark (issue 9).

    python bench/lint_repo.py DIR --layers 200 [--seed 7]

The shape follows the example repository (profiles/) scaled up, as a platform team's repository grows:

- one abstract `base`; abstract hardware layers `hw/*` (extends base) and site layers `site/*` (extends a
  hardware layer);
- model layers `models/*` (group "model", extends base), hybrid Nemotron-H and plain Qwen3 models;
- feature layers: KV paths (group "kv-path": CPU offload, NIXL disaggregation), ReplaySSM variants (declaring
  `conflicts = ["@kv-connector"]`, requiring `@hybrid-model`), tuning layers (group "tuning");
- deployments `deploy/*`: a model + a site (+ a feature), so `extends` chains run four deep
  (deploy -> site -> hw -> base);
- a few real undeclared conflicts: ReplaySSM variants that forgot to declare the KV conflict.

The same seed gives the same repository, byte for byte.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

_GPUS = ("h100", "h200", "gb200", "b200", "a100", "l40s", "mi300x")
_HYBRID = ("nvidia/Nemotron-H-8B-Base-8K", "nvidia/Nemotron-H-47B-Base-8K", "nvidia/NVIDIA-Nemotron-Nano-9B-v2")
_PLAIN = ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct")


def _layer(description: str, **head: object) -> str:
    lines = ["[layer]", f'description = "{description}"']
    for key, value in head.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, list):
            lines.append(f"{key} = [" + ", ".join(f'"{v}"' for v in value) + "]")
        else:
            lines.append(f'{key} = "{value}"')
    return "\n".join(lines) + "\n"


def _table(name: str, values: dict[str, object]) -> str:
    lines = [f"\n[{name}]"]
    for key, value in values.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, (int, float)):
            lines.append(f"{key} = {value}")
        else:
            lines.append(f'{key} = "{value}"')
    return "\n".join(lines) + "\n"


class _Repo:
    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.files: dict[str, str] = {}
        self.hybrid: list[str] = []
        self.models: list[str] = []
        self.sites: list[str] = []
        self.features: list[str] = []

    def add(self, name: str, text: str) -> str:
        self.files[name] = text
        return name

    def base(self) -> None:
        text = _layer("Defaults every deployment shares", abstract=True)
        text += _table("serve", {"host": "0.0.0.0", "port": 8000, "gpu_memory_utilization": 0.9})
        text += _table("env", {"VLLM_LOGGING_LEVEL": "INFO"})
        self.add("base", text)

    def hardware(self, count: int) -> None:
        for i in range(count):
            gpu = _GPUS[i % len(_GPUS)] + ("" if i < len(_GPUS) else f"-{i}")
            text = _layer(f"{gpu} hosts", abstract=True, extends=["base"])
            text += _table("serve", {"gpu_memory_utilization": round(0.85 + 0.01 * (i % 10), 2)})
            text += _table("env", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
            self.add(f"hw/{gpu}", text)

    def sites_(self, count: int) -> None:
        hardware = [n for n in self.files if n.startswith("hw/")]
        for i in range(count):
            name = f"site/dc{i}"
            text = _layer(f"data centre {i}", abstract=True, extends=[hardware[i % len(hardware)]])
            text += _table("env", {"UCX_NET_DEVICES": f"mlx5_{i % 8}:1"})
            self.sites.append(self.add(name, text))

    def models_(self, count: int) -> None:
        for i in range(count):
            hybrid = i % 3 == 0
            model = (_HYBRID if hybrid else _PLAIN)[i % 3 if hybrid else i % 4]
            arch = "NemotronHForCausalLM" if hybrid else "Qwen3ForCausalLM"
            name = f"models/m{i}"
            text = _layer(f"{model} variant {i}", group="model", extends=["base"])
            text += _table("model", {"architecture": arch})
            serve: dict[str, object] = {"model": model, "max_num_seqs": 64 * (1 + i % 4)}
            if hybrid:
                serve["trust_remote_code"] = True
                serve["mamba_ssm_cache_dtype"] = "float32"
            text += _table("serve", serve)
            self.models.append(self.add(name, text))
            if hybrid:
                self.hybrid.append(name)

    def features_(self, count: int) -> None:
        makers = (self._offload, self._disagg, self._replayssm, self._tuning)
        for i in range(count):
            self.features.append(makers[i % len(makers)](i))

    def _offload(self, i: int) -> str:
        text = _layer(f"KV offload to {8 + i} GiB of CPU memory", abstract=True, group="kv-path")
        text += _table("serve", {"kv_offloading_size": 8 + i, "kv_offloading_backend": "native"})
        return self.add(f"features/offload-{i}", text)

    def _disagg(self, i: int) -> str:
        text = _layer(f"P/D over NIXL, variant {i}", abstract=True, group="kv-path")
        for role, port, kv_role, gpu in (("prefill", 8100, "kv_producer", 0), ("decode", 8200, "kv_consumer", 1)):
            text += (
                f'\n[roles.{role}]\nkind = "vllm"\n'
                f"\n[roles.{role}.serve]\nport = {port + i}\n"
                f'kv_transfer_config = {{ kv_connector = "NixlConnector", kv_role = "{kv_role}" }}\n'
            )
            text += _table(
                f"roles.{role}.env",
                {"CUDA_VISIBLE_DEVICES": str(gpu), "VLLM_NIXL_SIDE_CHANNEL_PORT": str(5600 + 2 * i + gpu)},
            )
        return self.add(f"features/disagg-{i}", text)

    def _replayssm(self, i: int) -> str:
        declared = i % 16 != 2  # now and then a team forgets to declare the KV conflict: a real undeclared one
        head: dict[str, object] = {"abstract": True, "requires": ["@hybrid-model"], "provides": ["fast-decode"]}
        if declared:
            head["conflicts"] = ["@kv-connector"]
        text = _layer(f"ReplaySSM decode, variant {i}", **head)
        text += _table("serve", {"use_replayssm": True, "mamba_backend": "triton"})
        text += _table("env", {"VLLM_USE_V2_MODEL_RUNNER": "0"})
        return self.add(f"features/replayssm-{i}", text)

    def _tuning(self, i: int) -> str:
        text = _layer(f"batch tuning {i}", abstract=True, group="tuning")
        text += _table("serve", {"max_num_seqs": 32 * (1 + i % 8), "max_num_batched_tokens": 8192 * (1 + i % 4)})
        return self.add(f"features/tuning-{i}", text)

    def deployments(self, count: int) -> None:
        for i in range(count):
            model = self.hybrid[i % len(self.hybrid)] if i % 2 == 0 else self.models[i % len(self.models)]
            site = self.sites[i % len(self.sites)]
            extends = [model, site]
            if i % 3:  # two of three deployments add a feature that suits their model
                extends.append(self._feature_for(model, i))
            text = _layer(f"deployment {i}", extends=extends)
            text += _table("serve", {"max_num_seqs": 16 * (1 + i % 8)})
            self.add(f"deploy/d{i}", text)
        self._forgotten()

    def _forgotten(self) -> None:
        """Real undeclared conflicts: each ReplaySSM variant that forgot its KV conflict is deployed on the first
        hybrid model, beside a deployment of that model with KV offload."""
        model, site = self.hybrid[0], self.sites[0]
        offload = next(f for f in self.features if f.startswith("features/offload-"))
        forgot = [f for f in self.features if f.startswith("features/replayssm-") and "conflicts" not in self.files[f]]
        if forgot:
            self.add("deploy/offload-first-hybrid", _layer("KV offload beside", extends=[model, site, offload]))
        for i, feature in enumerate(forgot):
            self.add(f"deploy/fast-first-hybrid-{i}", _layer("fast decode", extends=[model, site, feature]))

    def _feature_for(self, model: str, i: int) -> str:
        kinds = ("replayssm", "offload", "tuning") if model in self.hybrid else ("offload", "disagg", "tuning")
        kind = kinds[i % len(kinds)]
        matching = [f for f in self.features if f.startswith(f"features/{kind}-")]
        return matching[(i // len(kinds)) % len(matching)]

    def write(self) -> None:
        (self.root / "profiles").mkdir(parents=True, exist_ok=True)
        (self.root / "profilekit.toml").write_text(
            '[vllm]\nversion = "0.33.0"\n\n[lint]\ncombinations = "none"\n', encoding="utf-8"
        )
        for name, text in self.files.items():
            path = self.root / "profiles" / f"{name}.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def generate(root: Path, layers: int, seed: int = 7) -> int:
    """Write a repository of about `layers` layer files under `root`; returns the number written."""
    repo = _Repo(root, random.Random(seed))
    repo.base()
    rest = layers - 1
    hardware = max(2, rest // 25)
    sites = max(2, rest // 10)
    models = max(3, rest // 8)
    features = max(4, rest // 4)
    repo.hardware(hardware)
    repo.sites_(sites)
    repo.models_(models)
    repo.features_(features)
    forgotten = sum(1 for f in repo.features if "replayssm" in f and "conflicts" not in repo.files[f])
    repo.deployments(max(1, rest - hardware - sites - models - features - forgotten - (forgotten > 0)))
    repo.write()
    return len(repo.files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--layers", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    written = generate(args.root, args.layers, args.seed)
    print(f"{args.root}: {written} layers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
