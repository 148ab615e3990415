"""Hypothesis-driven layer files and stacks through load -> compose -> check -> render, run by the real bash.

Invariants, for every generated repository:
- no exception escapes: each command ends with 0, 1 or 2 (never 3), without a traceback;
- `check` and `render` agree: a stack renders exactly when it checks without an error;
- a generated secret-shaped token never appears in any output or written file;
- whenever `render` succeeds, each role's script run by bash with a stub `vllm` (recording argv and env)
  reproduces the composed argv and env exactly, and python-dotenv reads the env file as the composed env.

The default run is bounded for CI; `PROFILEKIT_FUZZ_EXAMPLES=10000 pytest -m fuzz tests/fuzz` runs longer.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dotenv import dotenv_values
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from profilekit.cli import main
from profilekit.render.context import role_argv
from profilekit.rules.env import split_env
from profilekit.session import Session
from profilekit.vllm.catalogue import Flag, load_catalogue

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("PROFILEKIT_FUZZ_EXAMPLES", "60"))
VERSION = "0.33.0"
CATALOGUE = load_catalogue(VERSION)
assert CATALOGUE is not None
FLAGS = sorted(CATALOGUE.flags.values(), key=lambda f: f.dest)
# a token shaped like a Hugging Face access token: it must never be echoed anywhere
TOKEN = "hf_" + "Fuzz0Secret1Token2Value3Abcdefgh45"
SECRET_VALUE = "launch-time-secret-value"
# flags that take most values of their type without breaking a vLLM rule on their own (found by running
# `check` on each catalogue flag with six generated values): tame repositories draw from these
TAME_FLAGS = [
    "additional_config",
    "all2all_backend",
    "allowed_local_media_path",
    "anthropic_disabled_thinking_effort",
    "api_server_count",
    "async_scheduling",
    "block_size",
    "chat_template",
    "code_revision",
    "cohere_format",
    "config",
    "convert",
    "cp_kv_cache_interleave_size",
    "cpu_distributed_timeout_seconds",
    "cpu_offload_gb",
    "cpu_offload_params",
    "cudagraph_capture_sizes",
    "custom_histogram_buckets",
    "data_parallel_address",
    "data_parallel_rpc_port",
    "data_parallel_size",
    "data_parallel_start_rank",
    "data_parallel_supervisor_port",
    "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold",
    "dcp_kv_cache_interleave_size",
    "default_chat_template_kwargs",
    "device_ids",
    "disable_access_log_for_endpoints",
    "disable_fastapi_docs",
    "disable_log_stats",
    "distributed_timeout_seconds",
    "download_dir",
    "dp_supervisor_probe_failure_threshold",
    "dp_supervisor_probe_interval_s",
    "dp_supervisor_probe_timeout_s",
    "dp_sync_interval",
    "dtype",
    "elastic_ep_max_dp_size",
    "enable_chunked_prefill",
    "enable_log_requests",
    "enable_prefix_caching",
    "enforce_eager",
    "fingerprint_mode",
    "fingerprint_value",
    "gdn_prefill_backend",
    "generation_config",
    "gpu_memory_utilization",
    "h11_max_header_count",
    "h11_max_incomplete_event_size",
    "hf_config_path",
    "hf_overrides",
    "host",
    "ignore_patterns",
    "io_processor_plugin",
    "kda_decode_backend",
    "kda_prefill_backend",
    "kv_cache_dtype_skip_layers",
    "kv_cache_memory_bytes",
    "kv_cache_metrics_sample",
    "kv_offloading_size",
    "limit_mm_per_prompt",
    "linear_backend",
    "load_format",
    "log_level",
    "logprobs_mode",
    "long_prefill_token_threshold",
    "mamba_block_size",
    "mamba_cache_dtype",
    "mamba_cache_philox_rounds",
    "mamba_ssm_cache_dtype",
    "master_addr",
    "master_port",
    "max_cpu_loras",
    "max_cudagraph_capture_size",
    "max_log_len",
    "max_logprobs",
    "max_lora_cls_labels",
    "max_lora_rank",
    "max_loras",
    "max_model_len",
    "max_num_batched_tokens",
    "max_num_queued_reqs",
    "max_num_queued_tokens",
    "max_num_scheduled_tokens",
    "max_parallel_loading_workers",
    "media_io_kwargs",
    "middleware",
    "mm_encoder_attn_backend",
    "mm_encoder_fp8_scale_path",
    "mm_encoder_fp8_scale_save_margin",
    "mm_ipc_gpu_memory_gb",
    "mm_processor_cache_gb",
    "mm_processor_kwargs",
    "mm_shm_cache_max_object_size_mb",
    "model_class_overrides",
    "model_impl",
    "model_loader_extra_config",
    "moe_backend",
    "node_rank",
    "num_gpu_blocks_override",
    "offload_group_size",
    "offload_num_in_group",
    "offload_prefetch_step",
    "otlp_traces_endpoint",
    "override_generation_config",
    "pipeline_parallel_size",
    "port",
    "prefill_context_parallel_size",
    "prefill_schedule_interval",
    "prefix_cache_retention_interval",
    "prefix_caching_hash_algo",
    "prefix_match_unit",
    "pt_load_map_location",
    "reasoning_parser_plugin",
    "renderer_num_workers",
    "replayssm_buffer_len",
    "response_role",
    "revision",
    "root_path",
    "runner",
    "safetensors_load_strategy",
    "safetensors_prefetch_block_size",
    "safetensors_prefetch_num_threads",
    "scheduler_cls",
    "seed",
    "shutdown_timeout",
    "sleep_preserve_parameter_names",
    "sparse_indexer_topk_backend",
    "spec_model",
    "sse_keep_alive_interval",
    "ssl_ca_certs",
    "ssl_cert_reqs",
    "ssl_certfile",
    "ssl_ciphers",
    "ssl_keyfile",
    "stream_interval",
    "tensor_parallel_size",
    "tokenizer",
    "tokenizer_mode",
    "tokenizer_revision",
    "tool_call_parser",
    "tool_parser_plugin",
    "tool_server",
    "trust_remote_code",
    "uds",
    "uvicorn_log_level",
    "video_pruning_rate",
    "worker_cls",
    "worker_extension_cls",
]

TAME = [CATALOGUE.flags[dest] for dest in TAME_FLAGS if dest in CATALOGUE.flags]

# ---------------------------------------------------------------------------------------------- values

# characters a shell, an env file or TOML could misread, and a NUL (refused at load: bash would drop it)
_HOSTILE_CHARS = st.sampled_from(
    list("abcXYZ019 _-./=:,@%+")
    + list("'\"`$\\;&|<>(){}[]*?!~#^\t\n\r")
    + ["é", "中", "\u2028", "\x7f", "\x01", "\x00"]
)
_FRAGMENTS = st.sampled_from(["$${literal}", "$${env.A}", "$HOME", "$(id)", "`id`", "-x", "--y", "'$x'", '\\"'])
# references that may name nothing, and broken ones
_WILD_FRAGMENTS = st.sampled_from(["${env.A}", "${serve.port}", "${model.architecture}", "${", "${env.B_1}"])
text = st.lists(st.one_of(_HOSTILE_CHARS, _FRAGMENTS), max_size=8).map("".join)
wild_text = st.lists(st.one_of(_HOSTILE_CHARS, _FRAGMENTS, _WILD_FRAGMENTS), max_size=8).map("".join)
plain_text = st.text(alphabet="abcdefgh-_./0123456789", min_size=1, max_size=10)


def _scalar_of(kind: str, wild: bool) -> st.SearchStrategy[Any]:
    if "int" in kind:
        return st.integers(min_value=-3, max_value=70000)
    if "float" in kind:
        return st.one_of(st.floats(min_value=0, max_value=1, allow_nan=False), st.integers(0, 4))
    if "bool" in kind:
        return st.booleans()
    return st.one_of(plain_text, wild_text if wild else text)


def right_value(flag: Flag, wild: bool) -> st.SearchStrategy[Any]:
    """A value of the type the catalogue gives the flag (it may still break a vLLM rule)."""
    kind = str(flag.type or "str")
    if flag.is_bool:
        return st.booleans()
    if flag.is_json:
        inner = st.one_of(st.booleans(), st.integers(-2, 100), plain_text, wild_text if wild else text)
        return st.dictionaries(st.sampled_from(["kv_connector", "kv_role", "mode", "a", "b-c"]), inner, max_size=3)
    if flag.choices:
        choices = [c for c in flag.choices if isinstance(c, (str, int)) and not isinstance(c, bool)]
        if choices:
            choice = st.sampled_from(choices)
            return st.lists(choice, min_size=1, max_size=2) if flag.takes_many or flag.is_append else choice
    scalar = _scalar_of(kind, wild)
    if flag.takes_many or flag.is_append:
        return st.lists(scalar, min_size=1, max_size=3)
    return scalar


any_value = st.one_of(
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    wild_text,
    st.lists(st.one_of(st.integers(), text), max_size=2),
    st.dictionaries(plain_text, text, max_size=2),
)


def chance(draw: st.DrawFn, wild: bool, one_in: int) -> bool:
    """Something that breaks a rule or the schema: only in wild repositories, and then only now and then."""
    return wild and draw(st.integers(0, one_in - 1)) == 0


@st.composite
def serve_entries(draw: st.DrawFn, *, model: bool, wild: bool, port: int | None = None) -> dict[str, Any]:
    serve: dict[str, Any] = {}
    if model:
        serve["model"] = draw(st.one_of(st.just("org/model"), plain_text, text if wild else text.map("org/".__add__)))
    if port is not None:  # a role of its own: one port per role, as on one host
        serve["port"] = port
        name = text if wild else text.map("name ".__add__)  # '' or a leading '-': vLLM cannot read it
        serve["served_model_name"] = draw(st.lists(name, min_size=1, max_size=2))
    pool = FLAGS if wild else TAME
    for flag in draw(st.lists(st.sampled_from(pool), max_size=3, unique_by=lambda f: f.dest)):
        if flag.dest in serve or flag.dest in {"model", "host", "uds"}:
            continue
        key = flag.dest.replace("_", "-") if draw(st.booleans()) else flag.dest
        serve[key] = draw(any_value) if chance(draw, wild, 10) else draw(right_value(flag, wild))
    if chance(draw, wild, 10):  # a key no release has
        serve["not_an_option"] = 1
    return serve


ENV_NAMES = ["A", "B_1", "VLLM_X", "HF_TOKEN", "API_KEY", "lower"]
HOSTILE_ENV_NAMES = ["1BAD", "A-B", "FOO\n", "", "UID", "SHELLOPTS", "RANDOM", "SHLVL", "_", "PWD", "IFS", "BASH_ENV"]


def envs(wild: bool) -> st.SearchStrategy[dict[str, Any]]:
    if not wild:  # a secret-looking name takes a secret reference
        plain = st.dictionaries(st.sampled_from(ENV_NAMES[:3] + ENV_NAMES[5:]), st.one_of(text, plain_text), max_size=3)
        secret = st.dictionaries(st.sampled_from(ENV_NAMES[3:5]), st.just({"secret": True}), max_size=1)
        return st.tuples(plain, secret).map(lambda pair: {**pair[0], **pair[1]})
    names = st.sampled_from(ENV_NAMES)
    values: st.SearchStrategy[Any] = st.one_of(text, plain_text, st.just({"secret": True}))
    if wild:
        values = st.one_of(values, wild_text)
        names = st.one_of(names, names, names, st.sampled_from(HOSTILE_ENV_NAMES))
        values = st.one_of(values, st.just(TOKEN), st.just({"secret": False}), st.integers(0, 9))
    return st.dictionaries(names, values, max_size=4)


ROLE_NAMES = ["prefill", "decode", "proxy", "serve", "r-1"]
HOSTILE_ROLE_NAMES = ["../up", "a b", "x/y", "$(id)", ""]


def role_names(wild: bool) -> st.SearchStrategy[str]:
    names = st.sampled_from(ROLE_NAMES)
    return st.one_of(names, names, st.sampled_from(HOSTILE_ROLE_NAMES)) if wild else names


@st.composite
def role_tables(draw: st.DrawFn, wild: bool, port: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["vllm", "command", "env-only"] if wild else ["vllm", "command"]))
    table: dict[str, Any] = {}
    if kind != "env-only" and not chance(draw, wild, 5):  # declared (docs/ROLES.md), now and then not
        table["kind"] = kind
    if kind == "vllm":
        table["serve"] = draw(serve_entries(model=draw(st.booleans()), wild=wild, port=port))
    elif kind == "command":
        table["command"] = draw(st.lists(st.one_of(st.just("vllm-router"), text, plain_text), min_size=1, max_size=4))
        table["command"][0] = "vllm-router"
    if draw(st.booleans()):
        table["env"] = draw(envs(wild))
    return table


LAYER_NAMES = ["base", "a", "b", "site/h100", "c-d"]
TAME_UNSETS = ["serve.max_num_seqs", "env.A", "serve.port", "env.VLLM_X"]
UNSET_PATHS = [
    "serve.max_num_seqs",
    "env.A",
    "env.HF_TOKEN",
    "roles.prefill",
    "serve.kv_transfer_config.kv_role",
    "serve.nope",
    "roles.decode.env.B_1",
    "model",
]


@st.composite
def layer_tables(draw: st.DrawFn, name: str, names: list[str], wild: bool) -> dict[str, Any]:
    data: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    # tame repositories extend only layers written before (no cycle, no missing layer)
    parents = [n for n in LAYER_NAMES if n != name] + [name, "missing"] if wild else names[: names.index(name)]
    if parents and draw(st.integers(0, 2)) == 0:
        meta["extends"] = draw(st.lists(st.sampled_from(parents), max_size=2, unique=True))
    if draw(st.integers(0, 4)) == 0:
        meta["unset"] = draw(st.lists(st.sampled_from(UNSET_PATHS if wild else TAME_UNSETS), max_size=2, unique=True))
    if chance(draw, wild, 10):
        meta["abstract"] = True
    if draw(st.integers(0, 9)) == 0:
        meta["description"] = draw(text)
    if meta:
        data["layer"] = meta
    if name == "base" or draw(st.booleans()):
        data["serve"] = draw(serve_entries(model=name == "base", wild=wild))
    if draw(st.booleans()):
        data["env"] = draw(envs(wild))
        if name == "base" and draw(st.booleans()):  # a reference every vLLM role of a tame stack resolves
            data["env"]["VLLM_X"] = "model is ${serve.model}" + draw(text)
    if draw(st.integers(0, 2)) == 0:
        roles = draw(st.lists(role_names(wild), min_size=1, max_size=2, unique=True))
        data["roles"] = {role: draw(role_tables(wild, 8100 + sum(map(ord, role)) % 800)) for role in roles}
    if chance(draw, wild, 20):
        data["model"] = {"architecture": draw(st.sampled_from(["NemotronHForCausalLM", "LlamaForCausalLM", "x"]))}
    if chance(draw, wild, 30):  # a wrong type at the top of the schema
        data[draw(st.sampled_from(["serve", "env", "layer", "roles", "extra"]))] = draw(any_value)
    return data


# ---------------------------------------------------------------------------------------------- TOML text


def _key(key: str) -> str:
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else _string(key)


def _string(value: str) -> str:
    # json's escapes are TOML's, except DEL, which TOML wants escaped and json leaves raw
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"


def toml_text(data: dict[str, Any]) -> str:
    lines: list[str] = []
    for section, body in data.items():
        if section == "roles" and isinstance(body, dict) and all(isinstance(t, dict) for t in body.values()):
            for role, table in body.items():
                lines.append(f"[roles.{_key(role)}]")
                lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
        elif isinstance(body, dict):
            lines.append(f"[{_key(section)}]")
            lines += [f"{_key(k)} = {_value(v)}" for k, v in body.items()]
        else:
            lines.insert(0, f"{_key(section)} = {_value(body)}")
    return "\n".join(lines) + "\n"


@st.composite
def corrupt(draw: st.DrawFn, raw: bytes, wild: bool) -> bytes:
    """Now and then, a file damaged the way files get damaged: cut short, a stray byte, a NUL."""
    how = draw(st.integers(0, 24))
    if not wild or how > 3 or not raw:
        return raw
    at = draw(st.integers(0, len(raw)))
    if how == 0:
        return raw[:at]
    return raw[:at] + [b"\xff", b"\x00", b"{"][how - 1] + raw[at:]


@dataclass
class Repo:
    files: dict[str, bytes]
    stack: str


@st.composite
def repos(draw: st.DrawFn) -> Repo:
    wild = draw(st.integers(0, 3)) == 0  # a quarter of the repositories break things on purpose
    names = draw(st.lists(st.sampled_from(LAYER_NAMES[1:]), max_size=3, unique=True))
    if wild or draw(st.integers(0, 9)) > 0:
        names.insert(0, "base")  # the model, for vLLM roles
    names = names or ["a"]
    files = {
        name: draw(corrupt(toml_text(draw(layer_tables(name, names, wild))).encode("utf-8"), wild)) for name in names
    }
    stack = draw(st.lists(st.sampled_from([*names, "missing"] if wild else names), min_size=1, max_size=3))
    if not wild and names[0] == "base":
        stack.insert(0, "base")
    return Repo(files, "+".join(stack))


# ---------------------------------------------------------------------------------------------- running


def stub_folder(base: Path) -> Path:
    """A `vllm` and a `vllm-router` that record argv and environment as JSON (`-I -S`: quick to start)."""
    folder = base / "bin"
    folder.mkdir()
    recorder = (
        f"#!{sys.executable} -IS\n"
        "import json, os, sys\n"
        "with open(os.environ['STUB_RECORD'], 'w', encoding='utf-8') as f:\n"
        "    json.dump({'argv': sys.argv, 'env': dict(os.environ)}, f)\n"
    )
    for name in ("vllm", "vllm-router"):
        (folder / name).write_text(recorder, encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


def cli(*args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def write_repo(root: Path, repo: Repo) -> None:
    (root / "profiles" / "site").mkdir(parents=True)
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{VERSION}"\n', encoding="utf-8")
    for name, raw in repo.files.items():
        (root / "profiles" / f"{name}.toml").write_bytes(raw)


def assert_clean(code: int, out: str, err: str, what: str) -> None:
    assert code in (0, 1, 2), f"{what}: exit {code}\n{out}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, f"{what}:\n{err}"
    assert TOKEN not in out and TOKEN not in err, f"{what} echoed a secret:\n{out}\n{err}"


def run_script(script: Path, stubs: Path, record: Path, secrets: list[str]) -> dict[str, Any]:
    base = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_RECORD": str(record), "LANG": "C.UTF-8"}
    env = {**base, **dict.fromkeys(secrets, SECRET_VALUE)}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{script.name} failed ({proc.returncode}):\n{proc.stderr}\n{script.read_text()}"
    recorded: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    record.unlink()
    return recorded


def assert_renders_faithfully(root: Path, out_dir: Path, spec: str, stubs: Path) -> None:
    """Every role's script reproduces the composed argv and env; the env file reads as the composed env."""
    session = Session.open(repo=root, vllm_version=None)
    stack = session.stack(spec)
    written = {p.name for p in out_dir.iterdir()}
    for role in stack.roles.values():
        plain, secrets = split_env(role)
        recorded = run_script(out_dir / f"{role.name}.sh", stubs, out_dir.parent / "record.json", secrets)
        expected = role_argv(role, session.catalogue)
        assert [Path(recorded["argv"][0]).name, *recorded["argv"][1:]] == expected
        composed = {**plain, **dict.fromkeys(secrets, SECRET_VALUE)}
        seen = {k: v for k, v in recorded["env"].items() if k in composed}
        assert seen == composed
        assert dotenv_values(out_dir / f"{role.name}.env") == plain
        assert {f"{role.name}.sh", f"{role.name}.env"} <= written
    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    listed = {item["path"]: item["sha256"] for item in manifest["files"]}
    assert set(listed) | {"manifest.json"} == written  # one consistent set, nothing else
    for path in out_dir.iterdir():
        data = path.read_bytes()
        assert TOKEN.encode() not in data, f"{path.name} holds a secret"
        if path.name != "manifest.json":
            assert hashlib.sha256(data).hexdigest() == listed[path.name]
            assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.suffix == ".sh" else 0o644)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(repo=repos())
def test_pipeline_never_breaks_and_renders_what_it_composed(repo: Repo) -> None:
    with tempfile.TemporaryDirectory(prefix="pk-fuzz-") as tmp:
        base = Path(tmp)
        root = base / "repo"
        write_repo(root, repo)
        stubs = stub_folder(base)
        checked = cli("--repo", root, "check", repo.stack, "--format", "json")
        assert_clean(*checked, "check")
        if checked[0] != 2:
            report = json.loads(checked[1])
            assert checked[0] == (1 if report["summary"]["errors"] else 0), checked
        for args in (("show", repo.stack, "--format", "json"), ("explain", repo.stack)):
            assert_clean(*cli("--repo", root, *args), args[0])
        out_dir = base / "out"
        rendered = cli("--repo", root, "render", repo.stack, "--out", out_dir)
        assert_clean(*rendered, "render")
        event(f"render exit {rendered[0]}")
        assert rendered[0] == checked[0], f"check exit {checked[0]}, render exit {rendered[0]}:\n{rendered}"
        if rendered[0] != 0:
            assert not out_dir.exists(), "a failed render wrote files"
            return
        assert_renders_faithfully(root, out_dir, repo.stack, stubs)
        shutil.rmtree(out_dir)
