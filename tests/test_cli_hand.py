"""The command line as a hand types it (issue 13, items 4 and 7): global options anywhere, `-h`, stacks as layer
files, several stacks and `--all`, `render --role`, `--target a,b`, annotations that stand alone, `list`'s exit
code and the hint for a stack of abstract layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profilekit.cli.app import hoist_global_options
from tests.conftest import REPO_ROOT, MakeRepo, Run

KV_ROLE_MISSING = (
    'profiles/bad.toml:3:24: error kv-role-missing kv_transfer_config sets kv_connector = "NixlConnector" without '
    'kv_role; vLLM 0.33.0 refuses to start: "Please specify kv_role when kv_connector is set, supported roles are '
    "('kv_producer', 'kv_both', 'kv_consumer')\"\n"
    "    in stack bad, role serve\n"
    '    fix: add kv_role: "kv_producer" on prefill instances, "kv_consumer" on decode instances, "kv_both" for '
    "offload connectors\n"
)


@pytest.fixture
def two_apps(make_repo: MakeRepo) -> Path:
    """`app` checks clean, `bad` sets a connector without kv_role, `mixin` is abstract."""
    return make_repo(
        {
            "app.toml": "[serve]\nmodel = 'm'\n",
            "bad.toml": "[serve]\nmodel = 'm'\nkv_transfer_config = { kv_connector = 'NixlConnector' }\n",
            "mixin.toml": "[layer]\nabstract = true\n[serve]\nmax_num_seqs = 8\n",
        }
    )


# ---- global options after the command, -h ----------------------------------------------------------


def test_global_options_are_accepted_after_the_command(run: Run, tmp_path: Path) -> None:
    result = run("show", "qwen-offload", "--repo", REPO_ROOT, "--format", "json", cwd=tmp_path)
    assert result.code == 0, result
    assert json.loads(result.out)["layers"] == ["base", "models/qwen3-0.6b", "offload", "qwen-offload"]
    result = run("check", "qwen-offload", f"--repo={REPO_ROOT}", "--vllm-version=0.26.0", "--debug", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unsupported vLLM version '0.26.0' (from --vllm-version)\n"
        "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0\n"
    )


def test_arguments_after_a_double_dash_stay_where_they_are() -> None:
    assert hoist_global_options(["import", "--name", "x", "--debug", "--", "vllm", "serve", "m", "--debug"]) == [
        "--debug",
        "import",
        "--name",
        "x",
        "--",
        "vllm",
        "serve",
        "m",
        "--debug",
    ]
    assert hoist_global_options(["show", "s", "--repo"]) == ["show", "s", "--repo"]  # click reports the missing value


def test_dash_h_is_help_everywhere(run: Run) -> None:
    assert run("-h").out == run("--help").out
    assert run("-h").out.startswith("Usage: profilekit [OPTIONS] COMMAND [ARGS]...\n")
    for name in ("check", "render", "show", "flags"):
        result = run(name, "-h")
        assert result.code == 0, result
        assert result.out == run(name, "--help").out
        assert result.out.startswith(f"Usage: profilekit {name} [OPTIONS]")


# ---- stacks as layer files ----------------------------------------------------------------------------


def test_a_stack_of_layer_files_as_tab_completion_writes_them(run: Run) -> None:
    result = run("check", "profiles/qwen-disaggregated.toml+profiles/site/h100.toml", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out == "qwen-disaggregated+site/h100: no problems found (vLLM 0.33.0)\n"
    result = run("check", "qwen-offload.toml+site/h100", cwd=REPO_ROOT / "profiles")
    assert result.out == "qwen-offload+site/h100: no problems found (vLLM 0.33.0)\n"
    absolute = REPO_ROOT / "profiles" / "qwen-offload.toml"
    result = run("--repo", REPO_ROOT, "show", str(absolute), "--format", "json")
    assert json.loads(result.out)["stack"] == "qwen-offload"


def test_a_file_outside_profiles_or_missing_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text("[serve]\nmodel = 'm'\n", encoding="utf-8")
    result = run("--repo", REPO_ROOT, "check", "x.toml+site/h100", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: 'x.toml' in stack 'x.toml+site/h100' is not a layer file\n"
        f"  hint: layers are the .toml files under {REPO_ROOT / 'profiles'}\n"
    )
    result = run("check", "profiles/qwen-offlaod.toml", cwd=REPO_ROOT)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unknown layer 'qwen-offlaod' in stack 'profiles/qwen-offlaod.toml'\n"
        "  hint: did you mean 'qwen-offload'?\n"
    )


def test_render_of_layer_files_writes_to_the_folder_of_the_names(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"site/x.toml": "[serve]\nmodel = 'm'\n"})
    result = run("render", "profiles/site/x.toml", cwd=root)
    assert result.code == 0, result
    assert result.out == "build/site_x/serve.sh\nbuild/site_x/serve.env\nbuild/site_x/manifest.json\n"
    assert json.loads((root / "build/site_x/manifest.json").read_text(encoding="utf-8"))["stack"] == "site/x"


# ---- several stacks, --all ----------------------------------------------------------------------------


def test_check_several_stacks_reports_each(two_apps: Path, run: Run) -> None:
    result = run("check", "app", "bad", cwd=two_apps)
    assert result.code == 1
    assert result.out == KV_ROLE_MISSING + "1 error, 0 warnings\napp: no problems found (vLLM 0.33.0)\n"
    result = run("check", "app", "app+mixin", cwd=two_apps)
    assert result.code == 0
    assert result.out == ("app: no problems found (vLLM 0.33.0)\napp+mixin: no problems found (vLLM 0.33.0)\n")


def test_check_all_is_every_deployable_layer_and_lint_stack(run: Run, two_apps: Path) -> None:
    result = run("check", "--all", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out == (
        "deepseek-two-nodes: no problems found (vLLM 0.33.0)\n"
        "models/nemotron-h-8b: no problems found (vLLM 0.33.0)\n"
        "models/qwen3-0.6b: no problems found (vLLM 0.33.0)\n"
        "nemotron-replayssm: no problems found (vLLM 0.33.0)\n"
        "qwen-disaggregated: no problems found (vLLM 0.33.0)\n"
        "qwen-offload: no problems found (vLLM 0.33.0)\n"
        "nemotron-replayssm+site/h100: no problems found (vLLM 0.33.0)\n"
        "qwen-disaggregated+site/h100: no problems found (vLLM 0.33.0)\n"
    )
    data = json.loads(run("check", "--all", "--format", "json", cwd=two_apps).out)
    assert [(f["rule"], f["stack"]) for f in data["findings"]] == [("kv-role-missing", "bad")]
    assert data["summary"] == {"errors": 1, "warnings": 0, "ignored": 0, "ignored_by_rule": {}}


def test_naming_no_stack_or_both_stacks_and_all_is_a_usage_error(run: Run, two_apps: Path) -> None:
    result = run("check", cwd=two_apps)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: missing STACK\n  hint: name layers joined by '+' (e.g. base+replayssm), or pass --all\n"
    )
    result = run("render", "app", "--all", cwd=two_apps)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: give stacks or --all, not both\n  hint: --all means every stack lint checks alone\n"
    )
    result = run("check", "app", "nope", cwd=two_apps)  # every name is checked before anything runs
    assert result.code == 2
    assert result.out == ""


def test_show_several_stacks(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "show", "qwen-offload", "qwen-disaggregated", "--format", "json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert [(s["stack"], list(s["roles"])) for s in data["stacks"]] == [
        ("qwen-offload", ["serve"]),
        ("qwen-disaggregated", ["prefill", "decode", "proxy"]),
    ]
    import tomllib

    toml = tomllib.loads(run("--repo", REPO_ROOT, "show", "--all").out)
    assert [s["stack"] for s in toml["stacks"]][-2:] == ["nemotron-replayssm+site/h100", "qwen-disaggregated+site/h100"]


def test_render_several_stacks_one_folder_each_and_nothing_when_one_has_errors(
    two_apps: Path, run: Run, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = run("render", "app", "bad", "--out", out, cwd=two_apps)
    assert result.code == 1
    assert result.out == KV_ROLE_MISSING + "1 error, 0 warnings\n"
    assert result.err == "nothing rendered: bad has errors\n"
    assert not out.exists()
    result = run("render", "app", "app+mixin", "--out", out, cwd=two_apps)
    assert result.code == 0, result
    assert result.out == "".join(
        f"{out}/{folder}/{name}\n"
        for folder in ("app", "app+mixin")
        for name in ("serve.sh", "serve.env", "manifest.json")
    )
    result = run("render", "app", "app+mixin", "--print", cwd=two_apps)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: --print prints one script: name one stack\n  hint: e.g. render app --print\n"
    )


# ---- render --role, --target a,b --------------------------------------------------------------------


def test_render_role_touches_only_that_roles_files_and_says_so(run: Run, tmp_path: Path) -> None:
    import hashlib

    out = tmp_path / "pd"
    assert run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out).code == 0
    before = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["files"]
    (out / "decode.sh").write_text("# edited by hand\n", encoding="utf-8")
    (out / "prefill.sh").write_text("# stale\n", encoding="utf-8")
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--role", "prefill")
    assert result.code == 0, result
    assert result.out == f"{out}/prefill.sh\n{out}/prefill.env\n{out}/manifest.json\n"
    assert result.err == (
        f"rendered role prefill only; the files of roles decode, proxy in {out} were left as they were\n"
    )
    assert (out / "decode.sh").read_text(encoding="utf-8") == "# edited by hand\n"
    assert (out / "prefill.sh").read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")
    after = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert after == before  # prefill is rendered as before; the other entries are kept
    for item in after:
        if item["path"].startswith("prefill."):
            assert hashlib.sha256((out / item["path"]).read_bytes()).hexdigest() == item["sha256"]


def test_target_takes_a_comma_separated_list(run: Run, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert run("--repo", REPO_ROOT, "render", "qwen-offload", "--out", one, "--target", "script,env").code == 0
    assert (
        run("--repo", REPO_ROOT, "render", "qwen-offload", "--out", two, "--target", "script", "--target", "env").code
        == 0
    )
    assert sorted(p.name for p in one.iterdir()) == ["manifest.json", "serve.env", "serve.sh"]
    assert (one / "manifest.json").read_text(encoding="utf-8") == (two / "manifest.json").read_text(encoding="utf-8")
    result = run("--repo", REPO_ROOT, "render", "qwen-offload", "--out", one, "--target", "script,yaml")
    assert result.code == 2
    assert (
        result.err
        == "profilekit: error: unknown render target 'yaml'\n  hint: targets: script, env, vllm-config, k8s, slurm\n"
    )


# ---- messages that stand alone ------------------------------------------------------------------------


def test_list_exits_1_when_a_file_has_errors(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "app.toml": "[layer]\nextends = ['bse']\n[serve]\nmodel = 'm'\nmax_num_seq = 3\n",
            "b.toml": "[layer]\nextends = ['c']\n",
            "c.toml": "[layer]\nextends = ['b']\n",
            "base.toml": "[serve]\nport = 1\n",
        }
    )
    result = run("list", cwd=root)
    assert result.code == 1
    assert result.out == (
        "app     [extends=bse]\n"
        "b       [extends=c]\n"
        "base\n"
        "c       [extends=b]\n"
        "profiles/app.toml:2:12: error unknown-layer layer.extends[0] names no layer: 'bse'\n"
        "    fix: did you mean 'base'?\n"
        "profiles/app.toml:5:1: error unknown-option serve.max_num_seq: vLLM 0.33.0 has no option 'max_num_seq'\n"
        "    fix: did you mean 'max_num_seqs'?\n"
        "profiles/c.toml:2:12: error extends-cycle extends forms a cycle: b -> c -> b\n"
        "    fix: remove one of these `extends` entries\n"
        "3 errors, 0 warnings\n"
    )
    assert run("--repo", REPO_ROOT, "list").code == 0


def test_the_hint_for_abstract_layers_names_a_stack_that_works(run: Run, two_apps: Path) -> None:
    for spec, works in (
        ("site/h100", "nemotron-replayssm+site/h100"),
        ("replayssm", "nemotron-replayssm"),
        ("disaggregated", "qwen-disaggregated"),
    ):
        result = run("--repo", REPO_ROOT, "check", spec)
        assert result.code == 2
        assert result.err == (
            f"profilekit: error: stack {spec!r} names only abstract layers\n"
            f"  hint: abstract layers are mixins, never deployed alone; a stack with them that works: {works}\n"
        )
    result = run("render", "mixin", cwd=two_apps)  # no [lint] stack has it: a deployable layer with it on top
    assert result.err == (
        "profilekit: error: stack 'mixin' names only abstract layers\n"
        "  hint: abstract layers are mixins, never deployed alone; a stack with them that works: app+mixin\n"
    )


def test_the_hint_when_no_stack_with_the_abstract_layers_works(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "app.toml": "[serve]\nmodel = 'm'\n",
            "mixin.toml": "[layer]\nabstract = true\n[serve]\nkv_transfer_config = { kv_connector = 'NixlConnector' }\n",
        }
    )
    result = run("check", "mixin", cwd=root)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: stack 'mixin' names only abstract layers\n"
        "  hint: abstract layers are mixins, never deployed alone: compose them with a deployable layer, e.g. "
        "app+mixin (no such stack checks clean yet: `profilekit check app+mixin` says why)\n"
    )


def test_github_annotations_carry_stack_role_and_other_locations(run: Run) -> None:
    result = run("check", "nemotron-replayssm+offload", "--format", "github", cwd=REPO_ROOT)
    assert result.code == 1
    assert result.out.splitlines()[0] == (
        "::error file=profiles/replayssm.toml,line=5,col=14,title=declared-conflict::layer 'replayssm' conflicts "
        "with @kv-connector, which this stack has (role serve)"
        "%0Ain stack nemotron-replayssm+offload"
        "%0Aalso profiles/offload.toml:7:1: serve.kv_offloading_size (layer offload)"
        "%0Aalso profiles/offload.toml:8:1: serve.kv_offloading_backend (layer offload)"
        "%0A@kv-connector counts every active connector, including the one kv_offloading_size creates"
        "%0Afix: remove what brings @kv-connector (see the locations above), or leave 'replayssm' out of the stack"
    )
