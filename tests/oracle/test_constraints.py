"""Config-class constraints against vLLM itself: boundary values just inside and just outside each bound.

For every option of a release whose config field has a numeric bound (`gt`/`ge`/`lt`/`le`, from
`vllm-X.values.json`), for fields with a `Literal` type that argparse does not enforce, for bounded keys
of the JSON-valued options and for the registries of free strings, profilekit's verdict (accept, or the
rule vLLM reports first) must equal the one vLLM's `create_engine_config()` gives on the rendered argv.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.rules import vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import Catalogue, kind_of, load_catalogue
from profilekit.vllm.constraints import Values, load_values
from tests.oracle.models import config_json
from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_corpus import rule_for_message

ENV = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
# options whose in-range values start something the dummy model or the CPU oracle cannot judge, or that
# another check (not a field bound) refuses at the boundary; each reason is vLLM's, not profilekit's
SKIP = {
    "port": "the API server's port; not part of the engine config",
    "data_parallel_size": "data-parallel launches need a host and master port to connect to",
    "data_parallel_size_local": "data-parallel launches need a host and master port to connect to",
    "data_parallel_rank": "data-parallel launches need a host and master port to connect to",
    "data_parallel_start_rank": "data-parallel launches need a host and master port to connect to",
    "data_parallel_rpc_port": "data-parallel launches need a host and master port to connect to",
    "api_server_count": "multi-process API server settings",
    "nnodes": "multi-node launches need the other nodes",
    "node_rank": "multi-node launches need the other nodes",
    "tensor_parallel_size": "heads and GPUs decide (cross-field checks)",
    "pipeline_parallel_size": "layers and GPUs decide (cross-field checks)",
    "decode_context_parallel_size": "heads and tensor parallelism decide (cross-field checks)",
    "prefill_context_parallel_size": "heads and tensor parallelism decide (cross-field checks)",
}

# options another option must accompany for their config object to be built or accepted at all
COMPANIONS: dict[str, dict[str, Any]] = {
    "mamba_block_size": {"enable_prefix_caching": True},  # "--mamba-block-size can only be set with ..."
    "max_loras": {"enable_lora": True},  # LoRAConfig is built only with --enable-lora
    "max_lora_cls_labels": {"enable_lora": True},
}


def _bounded(schema: dict[str, Any]) -> dict[str, Any] | None:
    while schema.get("type") == "nullable":
        schema = schema["schema"]
    if schema.get("type") in ("int", "float") and any(k in schema for k in ("gt", "ge", "lt", "le")):
        return schema
    return None


def _edges(schema: dict[str, Any]) -> list[tuple[Any, bool]]:
    """(value, inside) pairs just inside and just outside each bound."""
    step: float = 1 if schema["type"] == "int" else 0.01
    out: list[tuple[Any, bool]] = []
    for key, inside_step, outside_step in (("gt", step, 0), ("ge", 0, -step), ("lt", -step, 0), ("le", 0, step)):
        if key in schema:
            bound = schema[key]
            out += [(_num(bound + inside_step, schema), True), (_num(bound + outside_step, schema), False)]
    return out


def _num(value: float, schema: dict[str, Any]) -> Any:
    return int(value) if schema["type"] == "int" else round(float(value), 4)


def cases(values: Values, catalogue: Catalogue) -> list[tuple[str, dict[str, Any]]]:
    """(case id, serve options) for every bounded option, literal field, bounded JSON key and registry."""
    out: list[tuple[str, dict[str, Any]]] = []
    for dest, entry in sorted((values.raw.get("options") or {}).items()):
        flag = catalogue.flag(dest)
        if flag is None or dest in SKIP or flag.choices or kind_of(flag).base not in ("int", "float", "human_int"):
            continue
        schema = _bounded(entry["schema"])
        if schema is None:
            continue
        for value, inside in _edges(schema):
            out.append((f"{dest}={value}:{'in' if inside else 'out'}", {dest: value, **COMPANIONS.get(dest, {})}))
    for dest, config in sorted((values.raw.get("json_options") or {}).items()):
        fields = (values.configs.get(config) or {}).get("fields") or {}
        for key, field_schema in sorted(fields.items()):
            schema = _bounded(field_schema)
            if schema is None or field_schema.get("init") is False:
                continue
            for value, inside in _edges(schema):
                out.append((f"{dest}.{key}={value}:{'in' if inside else 'out'}", {dest: {key: value}}))
        out.append((f"{dest}.unknown", {dest: {"no_such_key_anywhere": 1}}))
    for dest, splat in sorted((values.raw.get("splat_options") or {}).items()):
        if dest == "speculative_config":
            continue  # its values interact (method, model, tokens); sampled by hand below
        fields = (values.configs.get(splat["config"]) or {}).get("fields") or {}
        base = {key: 1 for key, schema in fields.items() if schema.get("required") and schema.get("type") == "int"}
        out.append((f"{dest}.missing-required", {dest: {}}))
        for key, field_schema in sorted(fields.items()):
            schema = _bounded(field_schema)
            if schema is None or field_schema.get("init") is False:
                continue
            for value, inside in _edges(schema):
                out.append((f"{dest}.{key}={value}:{'in' if inside else 'out'}", {dest: {**base, key: value}}))
    for dest in ("quantization", "kv_cache_dtype", "reasoning_parser"):
        registry = values.registry(dest)
        if registry and catalogue.flag(dest) is not None:
            out.append((f"{dest}=bogus", {dest: "bogus_name"}))
    out.append(
        (
            "speculative_config.num_speculative_tokens=0",
            {"speculative_config": {"method": "ngram", "num_speculative_tokens": 0}},
        )
    )
    out.append(
        (
            "speculative_config.typo",
            {"speculative_config": {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_mx": 3}},
        )
    )
    return out


def _layer(serve: dict[str, Any]) -> str:
    doc = tomlkit.document()
    doc["model"] = {"architecture": "NemotronHForCausalLM"}
    doc["serve"] = {"model": "org/nemotron", **serve}
    doc["env"] = dict(ENV)
    return tomlkit.dumps(doc)


@pytest.mark.oracle
def test_profilekit_refuses_exactly_the_boundary_values_vllm_refuses(oracle: OracleWorker, oracle_version: str) -> None:
    values = load_values(oracle_version)
    catalogue = load_catalogue(oracle_version)
    assert values is not None and catalogue is not None
    sample = cases(values, catalogue)
    assert len(sample) >= 40
    disagreements: list[str] = []
    refused = 0
    with tempfile.TemporaryDirectory(prefix="profilekit-constraints-") as tmp:
        root = Path(tmp)
        (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{oracle_version}"\n', encoding="utf-8")
        (root / "profiles").mkdir()
        for index, (case_id, serve) in enumerate(sample):
            name = f"c{index}"
            (root / "profiles" / f"{name}.toml").write_text(_layer(serve), encoding="utf-8")
            stack = compose(LayerIndex(root, catalogue), name)
            predicted = vllm_verdict(stack, "serve", version=oracle_version, catalogue=catalogue, root=root)
            argv = render_argv(stack.roles["serve"].serve, catalogue)
            answer = oracle.validate(argv, env=ENV, config_json=config_json("NemotronHForCausalLM"))
            assert not answer.get("undecidable"), (case_id, answer)
            actual = None
            if not answer.get("ok"):
                text = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
                actual = rule_for_message(text) or f"unmapped: {str(answer.get('error'))[:200]}"
                refused += 1
            expected = None if predicted.accepted else predicted.rule
            if expected != actual:
                disagreements.append(
                    f"{case_id}: profilekit {expected or 'accept'}, vLLM {actual or 'accept'}\n"
                    f"    argv={json.dumps(argv)}\n    vLLM: {str(answer.get('error'))[:300]}\n"
                    f"    profilekit: {predicted.message}"
                )
    assert disagreements == [], "\n".join(disagreements)
    assert refused >= len(sample) // 3


@pytest.mark.oracle
def test_value_constraints_match_the_committed_file(oracle: OracleWorker, oracle_version: str) -> None:
    answer = oracle.request({"op": "catalogue"}, timeout=600)
    committed = load_values(oracle_version)
    assert committed is not None
    assert answer["values"] == committed.raw, (
        f"src/profilekit/vllm/catalogues/vllm-{oracle_version}.values.json is stale: "
        f"run python3 tools/gen_catalogue.py --versions {oracle_version}"
    )
