"""`profilekit schema`: the JSON Schema of the layer file, checked with the real Taplo and with jsonschema.

Every layer of this repository and every file `init` writes must pass both; a misspelt `serve` key and a value
outside an option's choices must be refused by both, naming the key. Taplo (PyPI `taplo`, a binary) runs
offline: it fetches no schema catalogue unless `--default-schema-catalogs` is given, and reads the schema
from a `file://` URL.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from profilekit.load.schema import REFERENCE, layer_schema, spellings
from profilekit.vllm.catalogue import Catalogue, Flag, load_catalogue
from profilekit.vllm.constraints import argparse_problems, config_problems
from profilekit.vllm.values import problem
from profilekit.vllm.versions import SUPPORTED
from tests.conftest import REPO_ROOT, Run

LAYERS = sorted((REPO_ROOT / "profiles").rglob("*.toml"))
TAPLO = shutil.which("taplo", path=str(Path(sys.executable).parent)) or shutil.which("taplo")
BAD_LAYER = """\
[layer]
description = "two mistakes"

[serve]
max_num_seq = 64
dtype = "float9"
"""


def _schema(version: str) -> dict[str, Any]:
    catalogue = load_catalogue(version)
    assert catalogue is not None
    return layer_schema(catalogue)


def _write_schema(run: Run, tmp_path: Path, version: str) -> Path:
    path = tmp_path / f"layer-{version}.schema.json"
    result = run("--vllm-version", version, "schema", "--output", path, cwd=tmp_path)
    assert result.code == 0, result
    assert result.out == f"{path.as_posix()}\n"
    return path


def _taplo(schema: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    assert TAPLO is not None, "taplo is a test dependency (pip install -e '.[test]')"
    return subprocess.run(
        [TAPLO, "check", "--no-auto-config", "--colors", "never", "--schema", schema.as_uri(), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _accepted(flag: Flag, value: Any, version: str) -> bool:
    """profilekit's verdict on one option's value: no error (a warning is no refusal)."""
    found = problem(flag, value, version)
    if found is not None and not found.warning:
        return False
    if argparse_problems(flag, value, version):  # a JSON-valued option's table, as vLLM parses it
        return False
    return not config_problems(flag, value, version, serve={flag.dest: value})


def _errors(schema: dict[str, Any], text: str) -> list[str]:
    validator = Draft202012Validator(schema)
    return sorted(f"{e.json_path}: {e.message}" for e in validator.iter_errors(tomllib.loads(text)))


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_schema_is_a_valid_2020_12_schema_for_every_release(version: str) -> None:
    schema = _schema(version)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == f"profilekit layer (vLLM {version})"


def test_schema_prints_the_targeted_release_as_stable_sorted_json(run: Run, make_repo: Any) -> None:
    root = make_repo({}, config='[vllm]\nversion = "0.30.0"\n')
    first = run("schema", cwd=root)
    assert first.code == 0, first
    assert first.err == ""
    assert json.loads(first.out)["title"] == "profilekit layer (vLLM 0.30.0)"
    assert first.out == json.dumps(json.loads(first.out), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert run("schema", cwd=root).out == first.out
    assert json.loads(run("schema", "--vllm-version", "0.27.0", cwd=root).out)["title"] == (
        "profilekit layer (vLLM 0.27.0)"
    )


def test_schema_refuses_an_unknown_release(run: Run, tmp_path: Path) -> None:
    result = run("schema", "--vllm-version", "0.99.0", cwd=tmp_path)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "profilekit: error: unsupported vLLM version '0.99.0' (from --vllm-version)\n"
        "  hint: supported releases: " + ", ".join(SUPPORTED) + "\n"
    )


def test_every_layer_of_this_repository_passes_jsonschema() -> None:
    schema = _schema("0.33.0")  # the release this repository's profilekit.toml targets
    assert LAYERS, "profiles/ holds the example layers"
    for path in LAYERS:
        assert _errors(schema, path.read_text(encoding="utf-8")) == [], path


def test_every_layer_of_this_repository_passes_taplo(run: Run, tmp_path: Path) -> None:
    result = _taplo(_write_schema(run, tmp_path, "0.33.0"), *LAYERS)
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr.replace("ERROR", "").lower(), result.stderr


def test_a_misspelt_key_and_a_bad_choice_are_refused_by_jsonschema_naming_the_keys() -> None:
    assert _errors(_schema("0.33.0"), BAD_LAYER) == [
        "$.serve.dtype: 'float9' is not one of ['auto', 'bfloat16', 'float', 'float16', 'float32', 'half']",
        "$.serve: Additional properties are not allowed ('max_num_seq' was unexpected)",
    ]


def test_a_misspelt_key_and_a_bad_choice_are_refused_by_taplo_at_their_lines(run: Run, tmp_path: Path) -> None:
    layer = tmp_path / "bad.toml"
    layer.write_text(BAD_LAYER, encoding="utf-8")
    result = _taplo(_write_schema(run, tmp_path, "0.33.0"), layer)
    assert result.returncode == 1
    assert "error: Additional properties are not allowed ('max_num_seq' was unexpected)" in result.stderr
    assert f"┌─ {layer}:5:1\n  │\n5 │ max_num_seq = 64\n" in result.stderr
    assert 'error: "float9" is not one of ["auto","bfloat16","float","float16","float32","half"]' in result.stderr
    assert f'┌─ {layer}:6:9\n  │\n6 │ dtype = "float9"\n' in result.stderr


def test_both_spellings_aliases_and_references_are_accepted_where_profilekit_accepts_them() -> None:
    schema = _schema("0.33.0")
    text = """\
    [serve]
    tensor-parallel-size = 2
    tp = 2
    max_num_seqs = "${roles.prefill.serve.max_num_seqs}"
    mamba-backend = "FlashInfer"
    enforce_eager = "${serve.x}"
    optimization_level = 3
    max_model_len = "32k"
    served_model_name = "qwen"
    [serve.kv_transfer_config]
    kv_connector = "NixlConnector"
    [env]
    HF_TOKEN = { secret = true }
    [roles.proxy]
    command = ["vllm-router", "--port", "${serve.port}"]
    [roles.decode.serve]
    max-num-seqs = 8
    """.replace("    ", "")
    assert _errors(schema, text) == []


def test_a_negated_spelling_an_env_name_and_a_wrong_type_are_refused() -> None:
    text = """\
    [serve]
    no_enforce_eager = true
    max_num_seqs = 0
    gpu_memory_utilization = "high"
    enforce_eager = "yes"
    [env]
    VLLM_PORT = 8000
    "bad-name" = "1"
    [roles.a]
    command = []
    """.replace("    ", "")
    assert _errors(_schema("0.33.0"), text) == [
        "$.env.VLLM_PORT: 8000 is not valid under any of the given schemas",
        "$.env: 'bad-name' does not match any of the regexes: '^[A-Za-z_][A-Za-z0-9_]*$'",
        "$.roles.a.command: [] is not valid under any of the given schemas",
        "$.serve.enforce_eager: 'yes' is not of type 'boolean'",
        "$.serve.gpu_memory_utilization: 'high' is not of type 'number'",
        "$.serve.max_num_seqs: 0 is less than the minimum of 1",
        "$.serve: Additional properties are not allowed ('no_enforce_eager' was unexpected)",
    ]


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_the_schema_lists_exactly_the_keys_profilekit_reads_as_options(version: str) -> None:
    catalogue = load_catalogue(version)
    assert catalogue is not None
    properties = _schema(version)["$defs"]["Serve"]["properties"]
    assert set(properties) == set(spellings(catalogue))
    for key, ref in properties.items():
        flag = catalogue.resolve(key)
        assert flag is not None, key
        assert ref == {"$ref": f"#/$defs/options/{flag.dest}"}
    for dest in catalogue.flags:
        assert {dest, dest.replace("_", "-")} <= set(properties)


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_closed_set_and_bound_agrees_with_profilekits_own_check(version: str) -> None:
    """Each value the schema names (enum members, bounds and their neighbours) gets profilekit's verdict."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    options = _schema(version)["$defs"]["options"]
    checked = 0
    for dest, option in options.items():
        flag = catalogue.flags[dest]
        typed = option.get("else", option)
        if "anyOf" in typed or flag.takes_many or flag.is_append:
            continue
        probes: list[Any] = list(typed.get("enum", []))
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in typed:
                bound = typed[key]
                step = 1 if typed["type"] == "integer" else 0.001
                probes += [bound - step, bound, bound + step]
        for probe in probes:
            value = int(probe) if typed["type"] == "integer" else probe
            schema_says = not list(Draft202012Validator(option).iter_errors(value))
            assert schema_says == _accepted(flag, value, version), (dest, value)
            checked += 1
    assert checked > 100


def test_a_reference_string_is_the_only_string_an_integer_option_takes() -> None:
    validator = Draft202012Validator({**REFERENCE})
    assert validator.is_valid("${serve.port}")
    assert validator.is_valid("http://h:${serve.port}")
    assert not validator.is_valid("8000")
    assert best_match(Draft202012Validator(_schema("0.33.0")).iter_errors({"serve": {"port": "8000"}})).message == (
        "'8000' is not of type 'integer'"
    )


def test_the_schema_directive_of_one_file_is_read_relative_to_that_file(run: Run, tmp_path: Path) -> None:
    """docs/FORMAT.md: `#:schema ../profilekit.schema.json` in a layer, without any .taplo.toml."""
    _write_schema(run, tmp_path, "0.33.0").rename(tmp_path / "profilekit.schema.json")
    (tmp_path / "profiles").mkdir()
    layer = tmp_path / "profiles" / "bad.toml"
    layer.write_text("#:schema ../profilekit.schema.json\n" + BAD_LAYER, encoding="utf-8")
    assert TAPLO is not None
    result = subprocess.run(
        [TAPLO, "check", "--no-auto-config", "--colors", "never", str(layer)],
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert "error: Additional properties are not allowed ('max_num_seq' was unexpected)" in result.stderr


def test_every_layer_of_the_format_doc_passes_jsonschema() -> None:
    from tests.test_format_doc import _doc_files

    schema = _schema("0.33.0")
    layers = {name: text for name, text in _doc_files().items() if name.startswith("profiles/")}
    assert len(layers) >= 3
    for name, text in layers.items():
        assert _errors(schema, text) == [], name


def test_schema_output_into_a_missing_folder_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("schema", "--output", "nowhere/layer.schema.json", cwd=tmp_path)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "profilekit: error: cannot write nowhere/layer.schema.json: No such file or directory\n"
        "  hint: choose another file\n"
    )
    assert list(tmp_path.iterdir()) == []


# values of every TOML type and the strings options often take: what a person may write for any option
PROBES: list[Any] = [
    True,
    False,
    0,
    1,
    -1,
    8,
    0.5,
    1.5,
    "",
    "None",
    "auto",
    "x",
    "1",
    "8k",
    "TRITON",
    "mp",
    "fp8",
    "float16",
    "-x",
    "a,b",
    [],
    ["a"],
    ["a", "b"],
    [1, 2],
    {},
    {"a": 1},
]


def _release(version: str) -> tuple[Catalogue, dict[str, Any]]:
    """The catalogue of `version` and the `$defs` of its schema (one entry per option under `options`)."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    return catalogue, _schema(version)["$defs"]


def _option_validator(defs: dict[str, Any], dest: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/options/{dest}"})


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_schema_refuses_no_value_profilekit_accepts(version: str) -> None:
    """Each option, each probe: what profilekit takes (a warning at most), the schema takes; it refuses some too."""
    catalogue, defs = _release(version)
    refused_alike = 0
    for dest, flag in catalogue.flags.items():
        validator = _option_validator(defs, dest)
        assert validator.is_valid("${serve.port}"), dest  # resolved before profilekit checks the value
        if flag.takes_many or flag.is_append:
            assert validator.is_valid(["${serve.port}"] * (flag.nargs if isinstance(flag.nargs, int) else 1)), dest
        for probe in PROBES:
            if _accepted(flag, probe, version):
                assert validator.is_valid(probe), (dest, probe)
            elif not validator.is_valid(probe):
                refused_alike += 1
    assert refused_alike > 3000  # not a schema that takes everything


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_config_table_refuses_no_key_or_value_profilekit_accepts(version: str) -> None:
    """JSON-valued options: each key of the config class with each probe, and an unknown key, as vLLM parses them."""
    catalogue, defs = _release(version)
    tables = 0
    for dest, option in defs["options"].items():
        properties = option.get("else", {}).get("properties")
        if properties is None:
            continue
        tables += 1
        flag = catalogue.flags[dest]
        validator = _option_validator(defs, dest)
        assert not validator.is_valid({"no_such_key": 1}), dest
        assert not _accepted(flag, {"no_such_key": 1}, version), dest
        for key in properties:
            for probe in [*PROBES, "${serve.port}"]:
                if _accepted(flag, {key: probe}, version) or probe == "${serve.port}":
                    assert validator.is_valid({key: probe}), (dest, key, probe)
    assert tables >= 15


def test_a_misspelt_key_in_a_json_valued_option_is_refused() -> None:
    text = '[serve.kv_transfer_config]\nkv_conector = "NixlConnector"\nkv_role = "kv_prodcer"\n'
    assert _errors(_schema("0.33.0"), text) == [
        "$.serve.kv_transfer_config.kv_role: 'kv_prodcer' is not one of ['kv_producer', 'kv_both', 'kv_consumer']",
        "$.serve.kv_transfer_config: Additional properties are not allowed ('kv_conector' was unexpected)",
    ]
