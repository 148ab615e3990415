"""`render --target vllm-config`: the YAML file for `vllm serve --config` and the launch script that runs it.

What vLLM makes of the file is proven by tests/oracle/test_vllm_config.py; here: the file itself (golden),
the script executed by bash with a recording `vllm`, shellcheck, and values YAML would read as something else.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.config_yaml import config_args
from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_check_output import _golden
from tests.test_render import HOSTILE_LAYERS, launch, shellcheck


def _expanded(path: Path) -> list[str]:
    """The argv words vLLM inserts after the model for `--config path` (PyYAML, then load_config_file)."""
    mapping = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(mapping, dict)
    return config_args(mapping)


def test_the_example_stack_renders_its_golden_config_file(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "nemotron-replayssm", "--target", "vllm-config", "--out", out, cwd=REPO_ROOT)
    assert result.code == 0, result
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "serve.sh", "serve.yaml"]
    assert stat.S_IMODE((out / "serve.yaml").stat().st_mode) == 0o644
    assert stat.S_IMODE((out / "serve.sh").stat().st_mode) == 0o755
    _golden("vllm-config-nemotron-replayssm.yaml", (out / "serve.yaml").read_text(encoding="utf-8"))


def test_the_script_runs_vllm_with_the_config_file_and_the_roles_env(
    make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path
) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out dir"
    result = run("--repo", repo, "render", "base", "--target", "vllm-config", "--out", out)
    assert result.code == 0, result
    # run from another folder: the script finds the file next to itself
    proc, rec = launch(out / "serve.sh", stub_bin, tmp_path, "--port", "9000", env={"HF_TOKEN": "hf_from_env"})
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    argv: list[str] = rec["argv"]  # type: ignore[assignment]
    assert argv[1:] == ["serve", "org/model with space", "--config", f"{out}/serve.yaml", "--port", "9000"]
    env: dict[str, str] = rec["env"]  # type: ignore[assignment]
    assert env["HF_TOKEN"] == "hf_from_env"
    assert env["WITH_DOLLAR"] == "a $b $c} `d` \\e"
    assert env["NEWLINE"] == "line1\nline2"
    text = (out / "serve.yaml").read_text(encoding="utf-8")
    assert "hf_from_env" not in text
    assert "HF_TOKEN" not in text
    # what vLLM expands the file to: the rendered argv, word for word (JSON as the same object)
    rendered = render_argv(_serve_of(repo), load_catalogue("0.33.0"))[1:]
    expanded = _expanded(out / "serve.yaml")
    json_at = rendered.index("--kv-transfer-config") + 1
    assert json.loads(expanded[json_at]) == json.loads(rendered[json_at])
    assert expanded[:json_at] + expanded[json_at + 1 :] == rendered[:json_at] + rendered[json_at + 1 :]
    assert "no-trust-remote-code: true\n" in text  # false as the negative option: vLLM drops `x: false`
    assert "hf-overrides=-starts-with-dash: true\n" in text  # a value starting with '-' stays glued
    assert "kv-transfer-config:\n  kv_connector: NixlConnector\n" in text  # JSON options as nested mappings


def _serve_of(repo: Path) -> dict[str, Any]:
    from profilekit.session import Session

    return Session.open(repo=repo, vllm_version="0.33.0").stack("base").roles["serve"].serve


def test_a_missing_secret_stops_the_config_script_before_exec(
    make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path
) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "base", "--target", "vllm-config", "--out", out).code == 0
    proc, rec = launch(out / "serve.sh", stub_bin, tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "serve.sh: secret HF_TOKEN is not set; export it in the launching environment\n"
    assert rec is None


def test_config_scripts_pass_bash_n_and_shellcheck(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("render", "qwen-disaggregated", "--target", "vllm-config", "--out", out, cwd=REPO_ROOT).code == 0
    scripts = sorted(out.glob("*.sh"))
    assert [p.name for p in scripts] == ["decode.sh", "prefill.sh"]  # no up.sh: that is the script target's
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
    lint = subprocess.run(
        [shellcheck(), "--severity=style", *map(str, scripts)], capture_output=True, text=True, check=False
    )
    assert lint.returncode == 0, lint.stdout


# strings that YAML 1.1 (PyYAML) would read as a number, a boolean, a null or a date if written plain
RETYPED = ["0.9", "1", "true", "True", "yes", "on", "off", "no", "null", "~", "", "1e3", "1.0e+3", "0o7", "010",
           "0x1F", "1_000", "12:30", ".inf", "+.inf", ".nan", "2024-01-01", "2024-01-01 10:00:00", "[a]", "{a: 1}",
           "a: b", "# x", "x #y", "'q'", '"d"', "*ref", "&anchor", "!tag", "|", ">", "@", "`", "%", " lead",
           "trail ", "line\nbreak", "tab\there", "é 中文"]  # fmt: skip


@pytest.mark.parametrize("value", RETYPED)
def test_a_string_yaml_would_retype_reads_back_as_the_same_string(
    make_repo: MakeRepo, run: Run, tmp_path: Path, value: str
) -> None:
    import tomlkit

    repo = make_repo({"s.toml": tomlkit.dumps({"serve": {"model": "m", "revision": value, "tokenizer": value}})})
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out)
    assert result.code == 0, result
    # ASCII whatever the value holds: vLLM opens the file in the locale's encoding
    mapping = yaml.safe_load((out / "serve.yaml").read_bytes().decode("ascii"))
    assert mapping == {"revision": value, "tokenizer": value}


def test_numbers_and_lists_are_written_as_yaml_values(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo(
        {
            "s.toml": """
            [serve]
            model = "m"
            max_num_seqs = 64
            gpu_memory_utilization = 0.9
            served_model_name = ["a", "1.5", "no"]
            enable_prefix_caching = false
            max_model_len = -1
            compilation_config = { cudagraph_capture_sizes = [1, 2], mode = 3 }
        """
        }
    )
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out).code == 0
    body = "".join(line for line in (out / "serve.yaml").read_text(encoding="utf-8").splitlines(True)[4:])
    assert body == (
        "max-num-seqs: 64\n"
        "gpu-memory-utilization: 0.9\n"
        "served-model-name:\n"
        "- a\n"
        "- '1.5'\n"
        "- 'no'\n"
        "disable-prefix-caching: true\n"
        "max-model-len=-1: true\n"
        "compilation-config:\n"
        "  cudagraph_capture_sizes:\n"
        "  - 1\n"
        "  - 2\n"
        "  mode: 3\n"
    )


ODD = "odd\nrm -rf ~\n#"  # a layer file name that would end a comment line and start a command


def test_every_header_names_stack_layers_and_release_and_an_odd_name_stays_in_the_comment(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "base.toml": '[serve]\nmodel = "m"\n[roles.a.serve]\nport = 8001\n[roles.b.serve]\nport = 8002\n\n[roles.a]\nkind = "vllm"\n\n[roles.b]\nkind = "vllm"\n',
            f"{ODD}.toml": '[layer]\nextends = ["base"]\n[serve]\nmax_num_seqs = 2\n[env]\nA = "1"\n',
        }
    )
    scripts, configs = tmp_path / "scripts", tmp_path / "configs"
    assert run("--repo", repo, "render", ODD, "--out", scripts).code == 0
    assert run("--repo", repo, "render", ODD, "--target", "vllm-config", "--out", configs).code == 0
    odd = "odd\\nrm -rf ~\\n#"
    layers = f"# Layers, in merge order: base (profiles/base.toml), {odd} (profiles/{odd}.toml).\n"
    assert (scripts / "a.sh").read_text(encoding="utf-8").splitlines(keepends=True)[1:3] == [
        f"# Generated by profilekit 0.1.0: stack {odd}, role a, vLLM 0.33.0.\n",
        layers,
    ]
    assert (scripts / "a.env").read_text(encoding="utf-8").splitlines(keepends=True)[1] == layers
    assert (scripts / "up.sh").read_text(encoding="utf-8").splitlines(keepends=True)[2] == layers
    for script in (scripts / "a.sh", scripts / "up.sh", configs / "a.sh"):
        subprocess.run(["bash", "-n", str(script)], check=True)
    text = (configs / "a.yaml").read_text(encoding="utf-8")
    assert text == (
        f"# Generated by profilekit 0.1.0: stack {odd}, role a, vLLM 0.33.0.\n"
        + layers
        + "# Do not edit by hand: change the layers and run `profilekit render` again.\n"
        "# Read by `vllm serve MODEL --config a.yaml` (a.sh); the model stays on the command line.\n"
        "max-num-seqs: 2\n"
        "port: 8001\n"
    )
    assert yaml.safe_load(text) == {"max-num-seqs": 2, "port": 8001}


def test_a_role_with_only_a_model_gets_an_empty_mapping(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({"s.toml": '[serve]\nmodel = "m"\n'})
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out).code == 0
    assert yaml.safe_load((out / "serve.yaml").read_text(encoding="utf-8")) == {}


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (
            "script,vllm-config",
            "--target script and --target vllm-config both write each role's R.sh\n"
            "  hint: choose one: vllm-config writes R.yaml and an R.sh that runs `vllm serve MODEL --config R.yaml`",
        ),
        (
            "vllm-config --role proxy",
            "--target vllm-config writes files for vLLM roles, and proxy is a command role\n"
            "  hint: render command roles with --target script",
        ),
        (
            "vllm-cfg",
            "unknown render target 'vllm-cfg'\n  hint: did you mean 'vllm-config'? targets: script, env, vllm-config, k8s, slurm",
        ),
    ],
)
def test_targets_that_cannot_be_rendered_are_usage_errors(run: Run, tmp_path: Path, targets: str, message: str) -> None:
    target, *more = targets.split(" ")
    result = run("render", "qwen-disaggregated", "--target", target, *more, "--out", tmp_path, cwd=REPO_ROOT)
    assert result.code == 2
    assert result.err == f"profilekit: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_an_append_value_given_twice_has_two_spellings(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({"s.toml": '[serve]\nmodel = "m"\nmiddleware = ["a.b", "c.d", "a.b"]\n'})
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out).code == 0
    text = (out / "serve.yaml").read_text(encoding="utf-8")
    assert text.endswith("middleware: a.b\nmiddleware=c.d: true\nmiddleware=a.b: true\n")
    assert _expanded(out / "serve.yaml") == ["--middleware", "a.b", "--middleware=c.d", "--middleware=a.b"]


def test_an_append_value_given_three_times_cannot_be_a_config_entry(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo({"s.toml": '[serve]\nmodel = "m"\nmiddleware = ["a.b", "a.b", "a.b"]\n'})
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out)
    assert result.code == 1, result
    assert result.out == (
        "profiles/s.toml:3:1: error vllm-config-unwritable serve.middleware: a vLLM config file cannot give "
        "--middleware a.b a third time (it is a mapping: an option fits in it once as `KEY: VALUE` and once as "
        "`KEY=VALUE: true`)\n"
        "    in stack s, role serve\n"
        "    fix: render this role with --target script, or give each value at most twice\n"
        "1 error, 0 warnings\n"
    )
    assert not out.exists()


def test_render_explain_prints_where_every_argument_and_env_entry_comes_from(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "nemotron-replayssm", "--explain", "--out", out, cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.err == ""
    _golden("render-explain-nemotron-replayssm.txt", result.out)
    assert "[serve] HF_TOKEN (secret: exported from the launching environment, never written)\n" in result.out
    assert not out.exists()  # it writes nothing


def test_render_explain_of_one_role_of_a_stack_with_a_command_role(run: Run) -> None:
    result = run("render", "qwen-disaggregated", "--explain", "--role", "proxy", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out == (
        "[proxy] vllm-router --policy round_robin --vllm-pd-disaggregation --prefill http://127.0.0.1:8100 "
        "--decode http://127.0.0.1:8200 --host 127.0.0.1 --port 8192\n"
        "    set at profiles/disaggregated.toml:36:1  (roles.proxy.command, layer disaggregated)\n"
    )


def test_render_explain_with_print_is_a_usage_error(run: Run) -> None:
    result = run("render", "nemotron-replayssm", "--explain", "--print", cwd=REPO_ROOT)
    assert result.code == 2
    assert result.err == "profilekit: error: --print and --explain each print instead of writing: choose one\n"


def test_a_rendered_config_file_imports_back_to_the_composed_values(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "s.toml": """
            [serve]
            model = "m"
            max_model_len = -1
            enable_prefix_caching = false
            trust_remote_code = true
            served_model_name = ["a", "no"]
            revision = "0.9"
            gpu_memory_utilization = 0.85
            middleware = ["x.y", "x.y"]
            kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_both" }
        """
        }
    )
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "s", "--target", "vllm-config", "--out", out).code == 0
    imported = run(
        "--repo", repo, "import", "--name", "back", "--", "vllm", "serve", "m", "--config", out / "serve.yaml"
    )
    assert imported.code == 0, imported

    def serve(stack: str) -> object:
        result = run("--repo", repo, "show", stack, "--format", "json")
        assert result.code == 0, result
        return json.loads(result.out)["roles"]["serve"]["serve"]

    assert serve("back") == serve("s")


def test_a_non_ascii_layer_name_is_escaped_in_the_config_header(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({"café.toml": '[serve]\nmodel = "m"\nserved_model_name = ["thé"]\n'})
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "café", "--target", "vllm-config", "--out", out).code == 0
    text = (out / "serve.yaml").read_bytes().decode("ascii")
    assert text.startswith("# Generated by profilekit 0.1.0: stack caf\\xe9, role serve, vLLM 0.33.0.\n")
    assert yaml.safe_load(text) == {"served-model-name": "thé"}


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=12),
    number=st.integers(min_value=-(2**40), max_value=2**40),
    names=st.lists(st.text(min_size=1, max_size=6).filter(lambda s: not s.startswith("-")), min_size=1, max_size=3),
    table=st.dictionaries(
        st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=4), st.booleans()), max_size=3
    ),
)
def test_every_entry_expands_to_the_rendered_words(
    text: str, number: int, names: list[str], table: dict[str, Any]
) -> None:
    """Whatever the values hold, vLLM's expansion of the file (PyYAML, then load_config_file) gives the argv words."""
    from types import SimpleNamespace

    from profilekit.render.vllm_config import config_mapping
    from profilekit.vllm.config_yaml import dump_yaml

    catalogue = load_catalogue("0.33.0")
    serve = {"revision": text, "seed": number, "served_model_name": names, "hf_overrides": table}
    role = SimpleNamespace(name="serve", serve=serve, origins=lambda *path: [])
    mapping = config_mapping(None, role, catalogue)  # type: ignore[arg-type]
    expanded = config_args(yaml.safe_load(dump_yaml(mapping)))
    rendered = render_argv(serve, catalogue)
    # the JSON option: the same object, spelled with json.dumps' spaces
    at = rendered.index("--hf-overrides") + 1 if "--hf-overrides" in rendered else None
    if at is not None:
        assert json.loads(expanded[at]) == json.loads(rendered[at])
        expanded, rendered = expanded[:at] + expanded[at + 1 :], rendered[:at] + rendered[at + 1 :]
    assert expanded == rendered
