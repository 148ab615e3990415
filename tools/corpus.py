#!/usr/bin/env python3
"""Seeded corpora over the real options of one vLLM release, for the oracle round trips.

`layer_corpus(catalogue, seed=, count=)` makes stacks of layer files: each stack is 1-4 layers (joined
with `+` or through `extends`), the layers set and override real options with valid values of every
kind the catalogue has (booleans both ways, ints, floats, strings with awkward characters, choices,
enums checked after parsing in any case, human-readable numbers, JSON tables merged key by key across
layers, JSON lists, nargs lists, append lists), write keys in other spellings (dashes, short aliases,
other option strings), unset inherited keys and override per role. Alongside the files it gives the
effective `serve` table per role that composition must produce (DESIGN section 5), computed here
independently of profilekit.

`launch_corpus(catalogue, seed=, count=)` makes `vllm serve` argument lists that spell the same kind
of values the many ways vLLM's parser accepts (`--opt=v`, `--opt_name`, short aliases, `--no-x` and
`--disable-x`, JSON strings with spaces, dotted JSON keys, repeated options where the last wins,
`--model X`), for the import round trip.

Run it to see a sample: `python3 tools/corpus.py 0.33.0 --count 3`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

from profilekit.vllm.catalogue import Catalogue, Flag, enum_values, kind_of  # noqa: E402
from profilekit.vllm.cmdline import SECRET_OPTIONS  # noqa: E402
from profilekit.vllm.values import compact_json, json_is_list, problem  # noqa: E402

DEFAULT_SEED = 20260707
MODELS = ["Qwen/Qwen3-0.6B", "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "/models/Nemotron-H-8B", "org/m-ü"]
# options the round trip leaves out, with the reason (tests/oracle/test_roundtrip.py lists them)
NOT_GENERATED = {
    "config": "reads a YAML file at parse time; covered by the import round trip",
    "lora_modules": "vLLM stores LoRAModulePath objects the oracle worker cannot show field by field",
    "model": "always the positional model here",
}
STRINGS = [
    "alpha",
    "with space",
    "quote'd",
    'dq"x',
    "$HOME and `cmd`",
    "ünï-ç",
    "a=b",
    "x.y.z",
    "{not json",
    "tab\tsep",
    "back\\slash",
    "semi;colon&amp",
    "*glob?",
    "line\nbreak",
    "#hash",
    "~tilde",
    "0",
    "-leading-dash",
    "-dash.with.dot",
    "--double",
    "",
]
# JSON objects that each config class validates (checked against every release by the oracle suite)
CONFIG_SAMPLES: dict[str, list[dict[str, Any]]] = {
    "KVTransferConfig": [
        {"kv_connector": "NixlConnector", "kv_role": "kv_producer"},
        {"kv_connector": "NixlConnector", "kv_role": "kv_consumer", "kv_load_failure_policy": "fail"},
        {
            "kv_connector": "OffloadingConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"cpu_bytes_to_use": 1000000000, "block_size": 64},
        },
        {
            "kv_connector": "LMCacheConnectorV1",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"discard_partial_chunks": False, "n": [1, 2.5, "x"]},
        },
    ],
    "CompilationConfig": [{"mode": 0}, {"cudagraph_mode": "FULL_DECODE_ONLY"}, {"cudagraph_capture_sizes": [1, 2, 4]}],
    "AttentionConfig": [{"backend": "FLASH_ATTN"}],
    "StructuredOutputsConfig": [{"backend": "auto"}],
}


@dataclass
class Layer:
    name: str
    text: str


@dataclass
class Case:
    """One stack: its layer files, the spec to compose, and the effective serve table per role."""

    name: str
    layers: list[Layer]
    spec: str
    expected: dict[str, dict[str, Any]] = field(default_factory=dict)


def usable_flags(catalogue: Catalogue) -> list[Flag]:
    return [f for d, f in sorted(catalogue.flags.items()) if d not in NOT_GENERATED]


def _string(rng: random.Random, *, alone: bool, optional: bool) -> str:
    while True:
        value = rng.choice(STRINGS)
        if optional and value in ("", "None"):
            continue
        if not alone and value.startswith("-"):
            continue
        return value


def _case(rng: random.Random, text: str) -> str:
    return rng.choice([text.lower(), text.upper(), text.title(), text])


def _json_object(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(["a", "b_c", "d.e", "ü", "key with space", "n"])
        roll = rng.random()
        if roll < 0.2 and depth < 2:
            out[key] = _json_object(rng, depth + 1)
        elif roll < 0.35:
            out[key] = [rng.randint(-3, 3), rng.choice(STRINGS), 1.5]
        elif roll < 0.5:
            out[key] = rng.choice([True, False])
        elif roll < 0.7:
            out[key] = rng.randint(-(10**12), 10**12)
        elif roll < 0.8:
            out[key] = rng.choice([0.25, -3.5, 1e-07, 6.02e23])
        else:
            out[key] = rng.choice(STRINGS)
    return out


def value_for(flag: Flag, rng: random.Random, *, alone: bool = True) -> Any:
    """A valid TOML value for `flag` (checked with profilekit's own validation)."""
    for _ in range(50):
        value = _raw_value(flag, rng, alone=alone)
        if value is not _SKIP and problem(flag, value, "any") is None:
            return value
    raise RuntimeError(f"no valid value generated for {flag.dest}")


_SKIP: Any = object()


def _raw_value(flag: Flag, rng: random.Random, *, alone: bool) -> Any:
    kind = kind_of(flag)
    base = kind.base
    if flag.takes_many or flag.is_append:
        count = rng.randint(1, 3)
        return [_element(flag, rng, alone=count == 1 or flag.is_append) for _ in range(count)]
    if base == "bool":
        return rng.choice([True, False])
    return _element(flag, rng, alone=alone)


def _element(flag: Flag, rng: random.Random, *, alone: bool) -> Any:
    kind = kind_of(flag)
    base = kind.base
    choices = [c for c in flag.choices or () if c is not None]
    if base == "lowered_choice":
        return _case(rng, str(rng.choice(choices))).replace("_", rng.choice(["_", "-"]))
    if choices:
        return rng.choice(choices)
    spec = enum_values(flag)
    if spec is not None:
        names, folded = spec
        name = rng.choice(names)
        return _case(rng, name) if folded else name
    if base == "int":
        return rng.choice([0, 1, 2, 7, 4096, 65535, -1 if alone else 3, -17 if alone else 12])
    if base == "float":
        return rng.choice([0.5, 0.9, 1, 2, 1e-05, 12345.678, -1.25 if alone else 0.75, 3.0])
    if base in ("human_int", "human_int_auto"):
        options: list[Any] = [8192, "8k", "1K", "25.6k", "2G", "1m", 0]
        if base == "human_int_auto":
            options += ["auto", "AUTO", -1]
        return rng.choice(options)
    if base == "json_config":
        cls = (flag.type or "").rsplit(":", 1)[-1]
        samples = CONFIG_SAMPLES.get(cls, [{}])
        return json.loads(json.dumps(rng.choice(samples)))
    if base == "json":
        if json_is_list(flag):
            return [rng.choice(STRINGS[:8]) for _ in range(rng.randint(0, 3))]
        return _json_object(rng)
    if base == "dict_or_str":
        return _json_object(rng) if rng.random() < 0.5 else _string(rng, alone=alone, optional=True)
    if base == "device_ids":
        return rng.choice(["0,1", "3", [2, 3], "GPU-1a2b,1"])
    if base == "optional_value":
        return rng.choice([True, "token-in-file"])
    if base == "reasoning_parser":
        return rng.choice(["deepseek_r1", "None", "nemotron_v3", "qwen3"])
    return _string(rng, alone=alone, optional=kind.optional)


def _spellings(flag: Flag) -> list[str]:
    """Keys a layer may write for this option: the dest, dashes, and option strings that set it."""
    names = {flag.dest, flag.dest.replace("_", "-")}
    for option in flag.accepted:
        if flag.sets_true(option):
            names.add(option.lstrip("-"))
    return sorted(names)


def _toml_key(key: str) -> str:
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    """DESIGN 5.2: tables merge key by key; scalars and arrays are replaced (an empty table is a value)."""
    for key, value in update.items():
        if isinstance(value, dict) and value and isinstance(into.get(key), dict) and into[key]:
            _merge(into[key], value)
        elif isinstance(value, dict) and value:
            into[key] = json.loads(json.dumps(value))
        else:
            into[key] = value


def _layer_text(
    description: str,
    extends: str | None,
    unset: list[str],
    serve: dict[str, tuple[str, Any]],
    role_tables: dict[str, dict[str, tuple[str, Any]]],
    *,
    declares: set[str],
) -> str:
    """One corpus layer as TOML: its `[layer]` table, its `[serve]` and each role's `[roles.R.serve]`.

    A role the stack meets here first is declared here (`[roles.R] kind = "vllm"`, docs/ROLES.md)."""
    lines = [f'[layer]\ndescription = "{description}"']
    if extends is not None:
        lines.append(f'extends = ["{extends}"]')
    if unset:
        lines.append("unset = [" + ", ".join(json.dumps(u) for u in unset) + "]")
    lines.append("\n[serve]")
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in serve.values()]
    for role, table in role_tables.items():
        if role in declares:
            lines.append(f'\n[roles.{role}]\nkind = "vllm"')
        lines.append(f"\n[roles.{role}.serve]")
        lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in table.values()]
    return "\n".join(lines) + "\n"


def _expected(
    top: dict[str, Any], declared: list[str], per_role: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """What each role's effective serve table must be: a stack has roles once a layer declares one (else `serve`)."""
    if not declared:
        return {"serve": top}
    expected: dict[str, dict[str, Any]] = {}
    for role in declared:
        merged = json.loads(json.dumps(top))
        _merge(merged, per_role[role])
        expected[role] = merged
    return expected


def layer_corpus(catalogue: Catalogue, *, seed: int = DEFAULT_SEED, count: int = 500) -> list[Case]:
    """`count` stacks over the options of `catalogue`'s release."""
    rng = random.Random(f"{seed}-{catalogue.version}-layers")
    flags = usable_flags(catalogue)
    json_flags = [f for f in flags if kind_of(f).base in ("json", "json_config") and not json_is_list(f)]
    cases: list[Case] = []
    for number in range(count):
        case_name = f"c{number:03d}"
        n_layers = rng.randint(1, 4)
        roles = rng.choice([[], [], ["prefill", "decode"], ["solo"]])
        chained = rng.random() < 0.3  # compose through `extends` instead of a+b+c
        picked = rng.sample(flags, rng.randint(2, 7))
        layers: list[Layer] = []
        declared: list[str] = []
        top: dict[str, Any] = {}
        per_role: dict[str, dict[str, Any]] = {r: {} for r in roles}
        for index in range(n_layers):
            name = f"{case_name}/l{index}"
            serve: dict[str, tuple[str, Any]] = {}
            if index == 0:
                serve["model"] = ("model", rng.choice(MODELS))
            for flag in rng.sample(picked, rng.randint(1, len(picked))):
                serve[flag.dest] = (rng.choice(_spellings(flag)), value_for(flag, rng))
            if json_flags and rng.random() < 0.4:
                flag = rng.choice(json_flags)
                serve[flag.dest] = (rng.choice(_spellings(flag)), value_for(flag, rng))
            unset = []
            if index > 0 and rng.random() < 0.2 and top:
                victim = rng.choice(sorted(k for k in top if k != "model")) if len(top) > 1 else None
                if victim is not None and victim not in serve:
                    flag = catalogue.flags[victim]
                    unset.append(f"serve.{rng.choice(_spellings(flag))}")
            role_tables: dict[str, dict[str, tuple[str, Any]]] = {}
            for role in roles:
                if rng.random() < 0.5:
                    flag = rng.choice(picked)
                    role_tables[role] = {flag.dest: (rng.choice(_spellings(flag)), value_for(flag, rng))}
            extends = f"{case_name}/l{index - 1}" if chained and index > 0 else None
            declares = {role for role in role_tables if role not in declared}
            text = _layer_text(
                f"corpus {case_name} layer {index}", extends, unset, serve, role_tables, declares=declares
            )
            layers.append(Layer(name, text))
            # the expected effective tables, layer by layer
            _merge(top, {dest: value for dest, (_key, value) in serve.items()})
            for path in unset:
                dest = catalogue.resolve(path.split(".", 1)[1])
                assert dest is not None
                top.pop(dest.dest, None)
            for role, table in role_tables.items():
                if role not in declared:
                    declared.append(role)
                _merge(per_role[role], {dest: value for dest, (_key, value) in table.items()})
        expected = _expected(top, declared, per_role)
        spec = layers[-1].name if chained else "+".join(layer.name for layer in layers)
        cases.append(Case(case_name, layers, spec, expected))
    return cases


# ---- command lines for the import round trip ------------------------------------------------------


def _option_for(flag: Flag, rng: random.Random, *, value: bool) -> str:
    """Some option string that gives the flag `value` (booleans) or takes a value."""
    pool = [o for o in flag.accepted if (flag.sets_true(o) == value if flag.is_bool else True)]
    option = rng.choice(pool)
    if option.startswith("--") and rng.random() < 0.3:
        option = "--" + option[2:].replace("-", "_")  # vLLM folds underscores in option names
    return option


def _words(flag: Flag, value: Any) -> list[str]:
    if isinstance(value, list) and (flag.takes_many or flag.is_append):
        return [compact_json(v) if isinstance(v, (dict, list)) else _plain(v) for v in value]
    if isinstance(value, list) and flag.dest == "device_ids":
        return [",".join(str(v) for v in value)]
    return [_plain(value) if not isinstance(value, (dict, list)) else json.dumps(value, ensure_ascii=False)]


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def launch_corpus(catalogue: Catalogue, *, seed: int = DEFAULT_SEED, count: int = 200) -> list[list[str]]:
    """`count` argument lists (what follows `vllm serve`) in the spellings vLLM's parser accepts."""
    rng = random.Random(f"{seed}-{catalogue.version}-launches")
    # credentials (--api-key, --hf-token) are refused by import on purpose: they belong in the environment
    flags = [f for f in usable_flags(catalogue) if kind_of(f).base != "optional_value" and f.dest not in SECRET_OPTIONS]
    out: list[list[str]] = []
    for _ in range(count):
        chunks: list[list[str]] = []
        for flag in rng.sample(flags, rng.randint(1, 8)):
            for _repeat in range(2 if rng.random() < 0.1 and not flag.is_append else 1):
                chunk = _spell(flag, value_for(flag, rng), rng)
                if chunk:
                    chunks.append(chunk)
        model = rng.choice(MODELS)
        roll = rng.random()
        model_chunk = [model]
        if roll < 0.15:
            model_chunk = ["--model", model] if rng.random() < 0.5 else [f"--model={model}"]
        # the model first, or (as argparse allows) between two options; --model X anywhere
        at = 0 if roll > 0.3 else rng.randint(0, len(chunks))
        chunks.insert(at, model_chunk)
        out.append([word for chunk in chunks for word in chunk])
    return out


def _spell(flag: Flag, value: Any, rng: random.Random) -> list[str]:
    if flag.dest == "optimization_level" and rng.random() < 0.6:
        return rng.choice([[f"-O{value}"], [f"-O={value}"], ["-O", str(value)]])
    if flag.is_bool:
        if not value and flag.false_option is None:
            return []
        return [_option_for(flag, rng, value=bool(value))]
    option = _option_for(flag, rng, value=True)
    if flag.is_append:
        out: list[str] = []
        for item in value:
            out += _glue_or_not(option, _plain(item), rng)
        return out
    if isinstance(value, dict) and value and rng.random() < 0.4 and option.startswith("-"):
        # dotted keys: scalars only, each key a plain word (vLLM splits on '.')
        flat = {k: v for k, v in value.items() if "." not in k and " " not in k and not isinstance(v, (dict, list))}
        if flat and len(flat) == len(value):
            out = []
            for key, inner in flat.items():
                word = json.dumps(inner, ensure_ascii=False)
                if isinstance(inner, str) and rng.random() < 0.5 and not _json_like(inner):
                    word = inner
                if rng.random() < 0.5:
                    out.append(f"{option}.{key}={word}")
                else:
                    out += [f"{option}.{key}", word]
            return out
    words = _words(flag, value)
    if len(words) == 1:
        return _glue_or_not(option, words[0], rng)
    return [option, *words]


def _json_like(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return text[:1].isdigit()  # human-readable numbers are read as numbers too
    return True


def _glue_or_not(option: str, word: str, rng: random.Random) -> list[str]:
    if word.startswith("-"):
        return [f"{option}={word}"]
    return [f"{option}={word}"] if rng.random() < 0.3 else [option, word]


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    return json.dumps(value)  # a double-quoted YAML string (JSON escapes are YAML escapes)


def _yaml_lines(mapping: dict[str, Any], indent: str = "") -> list[str]:
    lines: list[str] = []
    for key, value in mapping.items():
        shown = key if key.replace("-", "").replace("_", "").isalnum() else json.dumps(key)
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{shown}:")
            lines += _yaml_lines(value, indent + "  ")
        elif isinstance(value, list):
            lines.append(f"{indent}{shown}: [" + ", ".join(_yaml_scalar(v) for v in value) + "]")
        elif isinstance(value, dict):
            continue  # an empty mapping has no block form in the subset
        else:
            lines.append(f"{indent}{shown}: {_yaml_scalar(value)}")
    return lines


def config_corpus(catalogue: Catalogue, *, seed: int = DEFAULT_SEED, count: int = 50) -> list[tuple[str, list[str]]]:
    """`vllm serve --config FILE.yaml` launches: (YAML text, the words after `vllm serve` but FILE)."""
    rng = random.Random(f"{seed}-{catalogue.version}-configs")
    flags = [
        f
        for f in usable_flags(catalogue)
        if kind_of(f).base not in ("optional_value", "device_ids") and f.dest not in SECRET_OPTIONS
    ]
    out: list[tuple[str, list[str]]] = []
    for _ in range(count):
        mapping: dict[str, Any] = {}
        for flag in rng.sample(flags, rng.randint(1, 6)):
            value = value_for(flag, rng)
            if isinstance(value, list) and not (flag.takes_many or flag.is_append):
                value = compact_json(value)  # a JSON-list option: one JSON word
            if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
                continue
            if flag.is_append:
                continue  # vLLM passes a YAML list as the values after one flag, which append takes as one
            if str(value).startswith("-") and "." in str(value):
                continue  # vLLM misreads such a word as a dotted option; import refuses it (test_importer.py)
            option = _option_for(flag, rng, value=True)
            if not option.startswith("--"):
                option = "--" + flag.dest.replace("_", rng.choice(["_", "-"]))
            mapping[option[2:]] = value
        model = rng.choice(MODELS)
        cli: list[str] = []
        if rng.random() < 0.5:
            mapping = {"model": model, **mapping}
        else:
            cli.append(model)
        text = "# generated by tools/corpus.py config_corpus\n" + "\n".join(_yaml_lines(mapping)) + "\n"
        out.append((text, cli))
    return out


def main(argv: list[str] | None = None) -> int:
    from profilekit.vllm.catalogue import load_catalogue

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--count", type=int, default=3)
    args = parser.parse_args(argv)
    catalogue = load_catalogue(args.version)
    if catalogue is None:
        parser.error(f"no catalogue for {args.version}")
    for case in layer_corpus(catalogue, seed=args.seed, count=args.count):
        print(f"# {case.spec}")
        for layer in case.layers:
            print(f"## profiles/{layer.name}.toml\n{layer.text}")
        print("# expected:", json.dumps(case.expected, ensure_ascii=False))
    for launch in launch_corpus(catalogue, seed=args.seed, count=args.count):
        print("vllm serve", " ".join(json.dumps(w, ensure_ascii=False) for w in launch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
