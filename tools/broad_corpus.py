#!/usr/bin/env python3
"""The broad verdict corpus: seeded compositions of 1-4 options drawn from a release's whole flag catalogue.

Each case serves one of the oracle's dummy models (tests/oracle/models.py: Nemotron-H and Kimi Linear,
hybrid; Llama and Qwen3, attention only), with the model's `config.json` in the profile repository
(`[model] config`) and given to vLLM. On top of it, one to four options drawn from the release's
catalogue (src/profilekit/vllm/catalogues/vllm-X.json), each with a boundary value for its type:

- booleans: true and false; options with choices: every choice, and now and then one that is not;
  enums converted after parsing: every member name, and one that is not;
- integers: 0, -1, 1, 2, 3, huge, and the default; floats: 0, -1, 0.5, 1, 1.5, huge, and the default;
- free strings: the spellings vLLM accepts for the options it checks after parsing (`FREE_STRINGS`),
  and a bogus one; lists (`nargs`): one or two such values;
- JSON options parsed into a config class: one to three of the class's keys
  (tests/oracle/data/config-fields-X.json, read from vLLM itself), each with a boundary value for its
  annotation, sometimes an unknown key (a typo, or a key an older release had); other JSON options: a
  few values from `JSON_VALUES`.

Options that need a network, weights, a tokenizer, or other files are left out, each with its reason
(`EXCLUDED`, `EXCLUDED_KEYS`); `exclusions(version)` lists them. The options are spread over one or two
layers (an earlier layer sometimes sets a value that the later one overrides). The same seed and
release always give the same cases.

    python3 tools/broad_corpus.py 0.33.0 --count 5     # prints the cases as JSON
    python3 tools/broad_corpus.py 0.33.0 --exclusions  # what is left out, and why
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for extra in (HERE, REPO, REPO / "src"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from verdict_common import Case, split_layers  # noqa: E402

SEED = 20261201
COUNT = 2000  # compositions per release, one vLLM role each
HUGE = 2**31 - 1
HUGE_FLOAT = 1e12
INTS = (0, -1, 1, 2, 3, HUGE)
FLOATS = (0.0, -1.0, 0.5, 1.0, 1.5, HUGE_FLOAT)
BOGUS = "bogus"

_FILES = "names a file or folder that the case does not have"
_HUB = "names something on the Hugging Face Hub: needs the network"
_CODE = "names Python code to import"
EXCLUDED: dict[str, str] = {
    "model_tag": "the model is the case's dummy model folder",
    "model": "the model is the case's dummy model folder",
    "config": "reads the options from a YAML file",
    "tokenizer": "a tokenizer on the Hub or in a folder (network or files)",
    "hf_config_path": "a Hugging Face config on the Hub or in a folder (network or files)",
    "revision": _HUB,
    "code_revision": _HUB,
    "tokenizer_revision": _HUB,
    "hf_token": _HUB,
    "spec_model": "a draft model on the Hub or in a folder (network or weights)",
    "download_dir": "a folder to download weights into",
    "chat_template": "a template file, or a template that needs the tokenizer",
    "lora_modules": "LoRA adapters: paths to their weights",
    "default_mm_loras": "LoRA adapters per modality: paths to their weights",
    "ssl_keyfile": _FILES,
    "ssl_certfile": _FILES,
    "ssl_ca_certs": _FILES,
    "allowed_local_media_path": "a folder of media files that must exist",
    "mm_encoder_fp8_scale_path": _FILES,
    "mm_encoder_fp8_scale_save_path": _FILES,
    "log_config_file": _FILES,
    "generation_config": "a folder holding generation_config.json",
    "reasoning_parser_plugin": "a Python file to import",
    "tool_parser_plugin": "a Python file to import",
    "logits_processors": _CODE,
    "scheduler_cls": _CODE,
    "worker_cls": _CODE,
    "worker_extension_cls": _CODE,
    "middleware": _CODE,
    "io_processor_plugin": _CODE,
}

# keys of JSON options: (dest, key) or ("*", key); keys named *_path, *_file, *_dir are left out too
EXCLUDED_KEYS: dict[tuple[str, str], str] = {
    ("speculative_config", "model"): "a draft model on the Hub or in a folder (network or weights)",
    ("speculative_config", "tokenizer"): "a tokenizer on the Hub or in a folder (network or files)",
    ("speculative_config", "revision"): _HUB,
    ("speculative_config", "code_revision"): _HUB,
    ("speculative_config", "draft_model_config"): "filled in by vLLM from the draft model, not a user key",
    ("speculative_config", "target_model_config"): "filled in by vLLM from the target model, not a user key",
    ("speculative_config", "draft_parallel_config"): "filled in by vLLM, not a user key",
    ("speculative_config", "target_parallel_config"): "filled in by vLLM, not a user key",
    ("speculative_config", "draft_load_config"): "filled in by vLLM, not a user key",
    ("ec_manager_config", "encoder_cache_manager_cls"): _CODE,
    ("*", "kv_connector_module_path"): _CODE,
    ("*", "ec_connector_module_path"): _CODE,
    ("*", "reasoning_parser_plugin"): "a Python file to import",
}
_FILE_SUFFIXES = ("_path", "_file", "_dir", "_dirs")

# free strings: the spellings vLLM knows for the ones it checks after parsing, then a bogus one
FREE_STRINGS: dict[str, tuple[str, ...]] = {
    "kv_cache_dtype": ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "fp8_inc", BOGUS),
    "quantization": ("fp8", "awq", "gptq", "bitsandbytes", "modelopt", BOGUS),
    "reasoning_parser": ("deepseek_r1", "qwen3", "granite", BOGUS),
    "tool_call_parser": ("hermes", "llama3_json", "mistral", BOGUS),
    "distributed_executor_backend": ("mp", "ray", "uni", "external_launcher", BOGUS),
    "load_format": ("auto", "dummy", "safetensors", "pt", "npcache", BOGUS),
    "tokenizer_mode": ("auto", "slow", "mistral", "custom", BOGUS),
    "config_format": ("auto", "hf", "mistral", BOGUS),
    "model_impl": ("auto", "vllm", "transformers", BOGUS),
    "data_parallel_backend": ("mp", "ray", BOGUS),
    "sleep_mode_backend": ("cumem", BOGUS),
    "cohere_format": ("cmd4", BOGUS),
    "optimization_level": ("0", "1", "2", "3", "4", "-1"),
    "override_attention_dtype": ("auto", "float16", "bfloat16", BOGUS),
    "host": ("0.0.0.0", "127.0.0.1", ""),
    "api_key": ("sk-broad-corpus",),
    "served_model_name": ("served", "a b"),
    "response_role": ("assistant", ""),
    "master_addr": ("127.0.0.1",),
    "data_parallel_address": ("127.0.0.1",),
    "numa_bind_cpus": ("0-3", BOGUS),
    "show_hidden_metrics_for_version": ("0.27", BOGUS),
    "otlp_traces_endpoint": ("http://127.0.0.1:4317",),
    "tool_server": ("127.0.0.1:1", BOGUS),
    "uds": ("/tmp/profilekit-broad.sock",),
    "root_path": ("/v1", ""),
    "device_ids": ("0", "0,1", "0,0", BOGUS),
}
# JSON options that no config class describes: a few values each ({} when not listed)
JSON_VALUES: dict[str, tuple[Any, ...]] = {
    "hf_overrides": ({}, {"num_attention_heads": 3}, {"max_position_embeddings": 1024}, {"num_hidden_layers": 1}),
    "default_chat_template_kwargs": ({}, {"enable_thinking": False}),
    "reasoning_effort_map": ({}, {"low": "minimal"}),
    "allowed_origins": ([], ["*"]),
    "allowed_methods": (["*"], ["GET"]),
    "allowed_headers": (["*"], []),
    "override_generation_config": ({}, {"temperature": 0.5}),
    "limit_mm_per_prompt": ({}, {"image": 0}, {"image": 2}, {"image": -1}),
    "media_io_kwargs": ({}, {"video": {"num_frames": 4}}),
    "mm_processor_kwargs": ({}, {"num_crops": 4}),
    "pt_load_map_location": ("cpu", "cuda:0", {"cuda:1": "cuda:0"}),
}
# (dest, key): the values worth drawing for a key whose annotation alone says little
KEY_VALUES: dict[tuple[str, str], tuple[Any, ...]] = {
    ("kv_transfer_config", "kv_connector"): (
        "NixlConnector",
        "OffloadingConnector",
        "ExampleConnector",
        "MultiConnector",
        "P2pNcclConnector",
        BOGUS,
    ),
    ("kv_transfer_config", "kv_buffer_device"): ("cuda", "cpu", BOGUS),
    ("kv_events_config", "publisher"): ("null", "zmq", BOGUS),
    ("ec_transfer_config", "ec_connector"): ("ECExampleConnector", BOGUS),
    ("compilation_config", "backend"): ("", "inductor", "eager", BOGUS),
    ("structured_outputs_config", "backend"): ("auto", "xgrammar", "guidance", "outlines", BOGUS),
    ("structured_outputs_config", "reasoning_parser"): ("", "deepseek_r1", BOGUS),
    ("reasoning_config", "reasoning_parser"): ("deepseek_r1", BOGUS),
    ("weight_transfer_config", "backend"): ("nccl", BOGUS),
}
# keys that make a JSON option do something: drawn more often than the rest
ANCHOR_KEYS: dict[str, tuple[str, ...]] = {
    "speculative_config": ("method", "num_speculative_tokens"),
    "kv_transfer_config": ("kv_connector", "kv_role"),
    "ec_transfer_config": ("ec_connector", "ec_role"),
    "compilation_config": ("mode", "cudagraph_mode"),
}
# keys that releases before 0.27.0 had, still seen in published launch recipes
OLD_KEYS: dict[str, tuple[str, ...]] = {
    "compilation_config": ("use_inductor", "use_cudagraph", "full_cuda_graph"),
    "kv_transfer_config": ("kv_rank", "kv_parallel_size"),
    "speculative_config": ("num_lookahead_slots",),
}
ARCHITECTURE_WEIGHTS = {
    "NemotronHForCausalLM": 0.3,
    "KimiLinearForCausalLM": 0.2,
    "LlamaForCausalLM": 0.3,
    "Qwen3ForCausalLM": 0.2,
}
OPTION_COUNTS = {1: 0.3, 2: 0.3, 3: 0.2, 4: 0.2}


@cache
def catalogue_entries(version: str) -> tuple[dict[str, Any], ...]:
    path = REPO / "src" / "profilekit" / "vllm" / "catalogues" / f"vllm-{version}.json"
    return tuple(json.loads(path.read_text(encoding="utf-8")))


@cache
def config_fields(version: str) -> dict[str, Any]:
    """{dest: {"class", "fields"}} of the JSON options parsed into config classes (tools/oracle/config_fields.py)."""
    path = REPO / "tests" / "oracle" / "data" / f"config-fields-{version}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _key_exclusion(dest: str, key: str, spec: dict[str, Any]) -> str | None:
    reason = EXCLUDED_KEYS.get((dest, key)) or EXCLUDED_KEYS.get(("*", key))
    if reason:
        return reason
    if key.endswith(_FILE_SUFFIXES):
        return _FILES
    if (dest, key) not in KEY_VALUES and not _drawable(spec):
        return f"no value to draw for its annotation ({_spec_name(spec)})"
    return None


def _spec_name(spec: dict[str, Any]) -> str:
    kind = spec.get("kind")
    if kind in ("optional", "list"):
        return f"{kind} of {_spec_name(spec.get('of') or {})}"
    return str(spec.get("class") or spec.get("repr") or kind)


def _drawable(spec: dict[str, Any]) -> bool:
    kind = spec.get("kind")
    if kind in ("bool", "int", "float", "str", "literal", "enum", "dict"):
        return True
    if kind in ("optional", "list"):
        return _drawable(spec.get("of") or {})
    if kind == "union":
        return any(_drawable(s) for s in spec.get("of") or [])
    if kind == "config":
        return bool(spec.get("fields"))
    return "default" in spec and spec["default"] is not None


def exclusions(version: str) -> dict[str, Any]:
    """What the corpus leaves out for `version`, and why."""
    dests = {e["dest"] for e in catalogue_entries(version)}
    options = {dest: reason for dest, reason in EXCLUDED.items() if dest in dests}
    keys: dict[str, str] = {}
    for dest, info in sorted(config_fields(version).items()):
        for key, spec in sorted(info["fields"].items()):
            reason = _key_exclusion(dest, key, spec)
            if reason:
                keys[f"{dest}.{key}"] = reason
    return {"options": dict(sorted(options.items())), "json_keys": keys}


# ---- values ------------------------------------------------------------------------------------------------


def _with_default(values: tuple[Any, ...], default: Any, kind: type) -> list[Any]:
    out = list(values)
    if isinstance(default, kind) and not isinstance(default, bool) and default not in out:
        out.append(default)
    return out


def _scalar(rng: random.Random, entry: dict[str, Any]) -> Any:
    """One value for one option (one element of a list option)."""
    dest = entry["dest"]
    label = str(entry.get("type") or "")
    base = label.removeprefix("optional:")
    default = entry.get("default")
    choices = entry.get("choices")
    if dest in FREE_STRINGS:
        return rng.choice(FREE_STRINGS[dest])
    if choices:
        usable = [c for c in choices if c is not None]
        if rng.random() < 0.12:
            return BOGUS if all(isinstance(c, str) for c in usable) else rng.choice([0, -1, 3])
        return rng.choice(usable)
    enum = entry.get("enum_after_parse") or {}
    if enum.get("member_names"):
        names = [str(n).lower() for n in enum["member_names"]]
        return BOGUS if rng.random() < 0.12 else rng.choice(names)
    if base in ("int", "human_readable_int"):
        return rng.choice(_with_default(INTS, default, int))
    if base == "human_readable_int_or_auto":
        return rng.choice([*_with_default(INTS, default, int), "auto", "1k"])
    if base == "float":
        return rng.choice(_with_default(FLOATS, default, float))
    if base == "parse_reasoning_parser":
        return rng.choice(FREE_STRINGS["reasoning_parser"])
    return rng.choice(_with_default((BOGUS,), default, str)) if default != "" else rng.choice((BOGUS, "x"))


def _value(rng: random.Random, version: str, entry: dict[str, Any]) -> Any:
    dest = entry["dest"]
    label = str(entry.get("type") or "")
    if entry.get("type") == "bool" or entry.get("nargs") == 0:
        return rng.random() < 0.5
    if dest in config_fields(version):
        return _json_config(rng, version, dest)
    if "json" in label or label.endswith("union_dict_and_str"):
        return rng.choice(JSON_VALUES.get(dest, ({},)))
    if entry.get("nargs") in ("+", "*") or entry.get("action") == "_AppendAction":
        return [_scalar(rng, entry) for _ in range(rng.choice((1, 1, 2)))]
    return _scalar(rng, entry)


def _field_value(rng: random.Random, spec: dict[str, Any], depth: int = 0) -> Any:
    """A boundary value for one key of a config class, from its annotation."""
    kind = spec.get("kind")
    default = spec.get("default")
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice(_with_default(INTS, default, int))
    if kind == "float":
        return rng.choice(_with_default(FLOATS, default, float))
    if kind == "str":
        return rng.choice(_with_default((BOGUS,), default, str))
    if kind == "literal":
        values = [v for v in spec.get("values") or [] if v is not None]
        return BOGUS if rng.random() < 0.12 or not values else rng.choice(values)
    if kind == "enum":
        names = list(spec.get("names") or [])
        return BOGUS if rng.random() < 0.12 or not names else rng.choice(names)
    if kind == "optional":
        return _field_value(rng, spec.get("of") or {}, depth)
    if kind == "list":
        if rng.random() < 0.3:
            return []
        return [_field_value(rng, spec.get("of") or {}, depth + 1)]
    if kind == "union":
        options = [s for s in spec.get("of") or [] if _drawable(s)]
        return _field_value(rng, rng.choice(options), depth) if options else default
    if kind == "dict":
        return {}
    if kind == "config" and spec.get("fields") and depth == 0:
        fields = {k: s for k, s in spec["fields"].items() if _drawable(s) and not k.endswith(_FILE_SUFFIXES)}
        if not fields:
            return {}
        key = rng.choice(sorted(fields))
        return {key: _field_value(rng, fields[key], depth + 1)}
    return default


def _json_config(rng: random.Random, version: str, dest: str) -> dict[str, Any]:
    """One to three keys of the config class `dest` is parsed into; now and then an unknown key."""
    fields = config_fields(version)[dest]["fields"]
    usable = sorted(k for k, spec in fields.items() if _key_exclusion(dest, k, spec) is None)
    chosen: list[str] = [k for k in ANCHOR_KEYS.get(dest, ()) if k in usable and rng.random() < 0.7]
    extra = rng.choice((0, 1, 1, 2))
    for key in rng.sample(usable, min(extra, len(usable))):
        if key not in chosen:
            chosen.append(key)
    out: dict[str, Any] = {}
    for key in chosen:
        if (dest, key) in KEY_VALUES:
            out[key] = rng.choice(KEY_VALUES[(dest, key)])
        else:
            out[key] = _field_value(rng, fields[key])
    if rng.random() < 0.1:
        unknown = _unknown_key(rng, version, dest, usable)
        if unknown is not None:
            out[unknown] = rng.choice((True, 1, BOGUS))
    return out


def _unknown_key(rng: random.Random, version: str, dest: str, usable: list[str]) -> str | None:
    """A key the class does not have: one an older release had, or a typo of one it has."""
    here = set(config_fields(version)[dest]["fields"])
    older: set[str] = set(OLD_KEYS.get(dest, ()))
    for other in _releases():
        if _version_key(other) < _version_key(version):
            older |= set(config_fields(other).get(dest, {}).get("fields", {}))
    gone = sorted(older - here)
    if gone and rng.random() < 0.6:
        return rng.choice(gone)
    if not usable:
        return None
    key = rng.choice(usable)
    if len(key) < 4:
        return key + "s"
    cut = rng.randrange(1, len(key) - 1)
    typo = key[:cut] + key[cut + 1 :]
    return typo if typo not in here else key + "_"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@cache
def _releases() -> tuple[str, ...]:
    folder = REPO / "tests" / "oracle" / "data"
    found = [p.stem.removeprefix("config-fields-") for p in folder.glob("config-fields-*.json")]
    return tuple(sorted(found, key=_version_key))


# ---- cases -------------------------------------------------------------------------------------------------


def option_pool(version: str) -> list[dict[str, Any]]:
    """The catalogue entries a case may draw from (every option less the excluded ones), in parser order."""
    return [e for e in catalogue_entries(version) if e.get("option_strings") and e["dest"] not in EXCLUDED]


def _decoy(rng: random.Random, key: str, value: Any) -> Any:
    """What an earlier layer sets before the case's layer overrides it: a value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < HUGE else 1
    if isinstance(value, float):
        return value + 0.25
    if isinstance(value, dict):
        return {}
    return value


def _pick(rng: random.Random, weighted: dict[Any, float]) -> Any:
    keys = list(weighted)
    return rng.choices(keys, weights=[weighted[k] for k in keys])[0]


def generate(version: str, count: int = COUNT, seed: int = SEED) -> list[Case]:
    """`count` cases for `version`; the same arguments always give the same cases."""
    from tests.oracle.models import config_json

    rng = random.Random(f"broad-{seed}-{version}")
    pool = option_pool(version)
    cases: list[Case] = []
    for n in range(count):
        arch = _pick(rng, ARCHITECTURE_WEIGHTS)
        config_path = f"models/{arch}/config.json"
        options: dict[str, Any] = {}
        for entry in rng.sample(pool, _pick(rng, OPTION_COUNTS)):
            options[entry["dest"]] = _value(rng, version, entry)
        serve = {"model": f"dummy/{arch}", **options}
        cid = f"b{n:05d}"
        layers, stack = split_layers(
            rng,
            cid,
            serve=serve,
            env={},
            model={"config": config_path},
            roles={},
            decoy=_decoy,
            layer_counts=(1, 1, 2),
            unset_victims=(),
        )
        files = {config_path: json.dumps(config_json(arch), indent=1) + "\n"}
        cases.append(Case(f"{version}/{cid}", arch, stack, layers, {"options": options}, files))
    return cases


def single_case(version: str, cid: str, arch: str, options: dict[str, Any]) -> Case:
    """One case of one layer: `options` on the dummy model `arch` (to re-judge a part of a case)."""
    import tomlkit
    from tests.oracle.models import config_json

    config_path = f"models/{arch}/config.json"
    doc = tomlkit.document()
    doc["model"] = {"config": config_path}
    doc["serve"] = {"model": f"dummy/{arch}", **options}
    files = {config_path: json.dumps(config_json(arch), indent=1) + "\n"}
    return Case(f"{version}/{cid}", arch, f"{cid}/l0", {f"{cid}/l0": tomlkit.dumps(doc)}, {"options": options}, files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--exclusions", action="store_true", help="print what is left out, and why")
    args = parser.parse_args(argv)
    if args.exclusions:
        json.dump(exclusions(args.version), sys.stdout, indent=1)
    else:
        json.dump([c.as_dict() for c in generate(args.version, args.count, args.seed)], sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
