"""Nothing named is unknown (issue 8, item 3): roles, unset paths and capabilities that match nothing.

How roles come into existence is written down in docs/ROLES.md; these tests hold it.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import MakeRepo, Run

MODEL = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
PD = """
[serve]
model = "Qwen/Qwen3-0.6B"

[roles.prefill.serve]
port = 8100

[roles.decode.serve]
port = 8200

[roles.decode]
kind = "vllm"

[roles.prefill]
kind = "vllm"
"""
SITE_PREFIL = """
[layer]
abstract = true

[roles.prefil.env]
UCX_TLS = "rc,cuda_copy"
"""
SITE_DECODE = """
[layer]
abstract = true

[roles.decode.env]
UCX_TLS = "rc,cuda_copy"
"""
UNKNOWN_PREFIL = (
    "profiles/site.toml:4:1: error unknown-role [roles.prefil] names role 'prefil', which no layer of the "
    "repository declares\n"
    "    fix: did you mean 'prefill'?\n"
)
UNKNOWN_DECODE = (
    "profiles/site.toml:4:1: error unknown-role [roles.decode] names role 'decode', which no layer of the "
    "repository declares\n"
    "    fix: a stack without declared roles has one role, 'serve': put the values in [serve] and [env]; or declare "
    'the role in the layer that defines it: [roles.decode] kind = "vllm" or "command"\n'
)


def _lint_repo(make_repo: MakeRepo, files: dict[str, str], stacks: list[str]) -> Path:
    return make_repo(files, config=f'[vllm]\nversion = "0.33.0"\n\n[lint]\nstacks = {json.dumps(stacks)}\n')


# ---- issue row: [roles.prefil.env] in a site layer rendered a whole extra role ----------------------------


def test_env_for_a_misspelt_role_is_unknown_role_in_check(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"pd.toml": PD, "site.toml": SITE_PREFIL})
    result = run("check", "pd+site", cwd=root)
    assert result.code == 1, result
    assert result.out == UNKNOWN_PREFIL + "1 error, 0 warnings\n"


def test_render_refuses_a_stack_with_an_unknown_role_and_writes_nothing(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"pd.toml": PD, "site.toml": SITE_PREFIL})
    result = run("render", "pd+site", cwd=root)
    assert result.code == 1, result
    assert (result.out, result.err) == ("", UNKNOWN_PREFIL + "1 error, 0 warnings\n")
    assert not (root / "build").exists()


def test_lint_strict_reports_the_unknown_role_of_a_listed_stack(make_repo: MakeRepo, run: Run) -> None:
    root = _lint_repo(make_repo, {"pd.toml": PD, "site.toml": SITE_PREFIL}, ["pd+site"])
    result = run("lint", "--strict", cwd=root)
    assert result.code == 1, result
    assert result.out == (
        "profiles/site.toml:4:1: error unknown-role [roles.prefil] names role 'prefil', which no layer of the "
        "repository declares\n"
        "    fix: did you mean 'prefill'?\n"
        "1 error, 0 warnings\n"
    )


def test_env_for_a_defined_role_adds_to_it_wherever_the_layer_stands(make_repo: MakeRepo, run: Run) -> None:
    site = SITE_PREFIL.replace("prefil.", "prefill.")
    root = make_repo({"pd.toml": PD, "site.toml": site})
    for spec in ("pd+site", "site+pd"):
        shown = run("show", spec, "--format", "json", cwd=root)
        assert shown.code == 0, shown
        roles = json.loads(shown.out)["roles"]
        assert list(roles) == ["prefill", "decode"]
        assert roles["prefill"]["env"] == {"UCX_TLS": "rc,cuda_copy"}
        assert roles["decode"]["env"] == {}
        assert run("check", spec, cwd=root).code == 0


# ---- issue row: [roles.decode.env] renamed a single-role stack's only role -------------------------------


def test_env_for_a_role_of_a_single_role_stack_is_unknown_role(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"m.toml": MODEL, "site.toml": SITE_DECODE})
    result = run("check", "m+site", cwd=root)
    assert result.code == 1, result
    assert result.out == UNKNOWN_DECODE + "1 error, 0 warnings\n"
    rendered = run("render", "m+site", cwd=root)
    assert rendered.code == 1, rendered
    assert not (root / "build").exists()


def test_a_single_role_stack_keeps_its_role_name(make_repo: MakeRepo, run: Run) -> None:
    site = SITE_DECODE.replace("roles.decode.env", "env")
    root = make_repo({"m.toml": MODEL, "site.toml": site})
    shown = run("show", "m+site", "--format", "json", cwd=root)
    assert shown.code == 0, shown
    assert json.loads(shown.out)["roles"] == {
        "serve": {"serve": {"model": "Qwen/Qwen3-0.6B"}, "env": {"UCX_TLS": "rc,cuda_copy"}}
    }


def test_env_for_the_implicit_serve_role_adds_to_it(make_repo: MakeRepo, run: Run) -> None:
    site = SITE_DECODE.replace("roles.decode.env", "roles.serve.env")
    root = make_repo({"m.toml": MODEL, "site.toml": site})
    shown = run("show", "m+site", "--format", "json", cwd=root)
    assert shown.code == 0, shown
    assert json.loads(shown.out)["roles"]["serve"]["env"] == {"UCX_TLS": "rc,cuda_copy"}


def test_serve_keys_or_a_command_define_a_role(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "m.toml": MODEL,
            "decode.toml": '[roles.decode.serve]\nport = 8200\n\n[roles.decode]\nkind = "vllm"\n',
            "proxy.toml": '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router", "--port", "8192"]\n',
        }
    )
    shown = run("show", "m+decode+proxy", "--format", "json", cwd=root)
    assert shown.code == 0, shown
    assert list(json.loads(shown.out)["roles"]) == ["decode", "proxy"]


def test_env_after_the_role_was_unset_is_unknown_role(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "pd.toml": PD,
            "noprefill.toml": '[layer]\nunset = ["roles.prefill"]\n',
            "site.toml": SITE_PREFIL.replace("prefil.", "prefill."),
        }
    )
    result = run("check", "pd+noprefill+site", cwd=root)
    assert result.code == 1, result
    assert result.out == (
        "profiles/site.toml:4:1: error unknown-role [roles.prefill] adds to role 'prefill', which layer "
        "'noprefill' removes before it (unset 'roles.prefill')\n"
        "    profiles/noprefill.toml:2:10: layer.unset[0] (layer noprefill)\n"
        "    fix: the roles of this stack are decode; or declare role 'prefill' again after the unset "
        "([roles.prefill] kind = ...)\n"
        "1 error, 0 warnings\n"
    )
    # env added before the unset goes with the role
    shown = run("show", "pd+site+noprefill", "--format", "json", cwd=root)
    assert shown.code == 0, shown
    assert list(json.loads(shown.out)["roles"]) == ["decode"]


def test_unknown_role_in_lint_pairs_is_a_file_problem_not_an_undeclared_conflict(make_repo: MakeRepo, run: Run) -> None:
    deployable_site = SITE_DECODE.replace("abstract = true", 'extends = ["pd"]')
    root = make_repo({"pd.toml": PD, "m.toml": MODEL, "site.toml": deployable_site})
    result = run("lint", "--strict", "--combinations", "all", cwd=root)
    assert result.code == 0, result
    assert result.out.startswith("lint: 3 files, 3 stacks, 4 combinations checked, no problems found"), result


# ---- issue row: unset = ["serve.downlod_dir"] --------------------------------------------------------------

UNSET_TYPO = """
[layer]
unset = ["serve.downlod_dir"]
"""


def test_an_unset_that_removes_nothing_names_the_key_effective_there(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"m.toml": MODEL + 'download_dir = "/data"\n', "strip.toml": UNSET_TYPO})
    expected = (
        "profiles/strip.toml:2:10: warning unset-removes-nothing unset 'serve.downlod_dir' removes nothing: nothing "
        "sets serve.downlod_dir up to layer 'strip'\n"
        "    fix: did you mean 'serve.download_dir'?\n"
        "0 errors, 1 warning\n"
    )
    result = run("check", "m+strip", cwd=root)
    assert (result.code, result.out) == (0, expected), result
    assert run("check", "--strict", "m+strip", cwd=root).code == 1
    root_lint = _lint_repo(make_repo, {"m.toml": MODEL + 'download_dir = "/data"\n', "strip.toml": UNSET_TYPO}, [])
    (root_lint / "profiles" / "strip.toml").write_text('[layer]\nextends = ["m"]\nunset = ["serve.downlod_dir"]\n')
    linted = run("lint", "--strict", cwd=root_lint)
    assert linted.code == 1, linted
    assert "warning unset-removes-nothing unset 'serve.downlod_dir' removes nothing" in linted.out


def test_an_unset_that_removes_something_is_fine(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {"m.toml": MODEL + 'download_dir = "/data"\n', "strip.toml": '[layer]\nunset = ["serve.download-dir"]\n'}
    )
    result = run("check", "m+strip", cwd=root)
    assert result.code == 0, result


def test_an_unset_before_the_layer_that_sets_the_key_says_so(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {"m.toml": MODEL + 'download_dir = "/data"\n', "strip.toml": '[layer]\nunset = ["serve.download_dir"]\n'}
    )
    result = run("check", "strip+m", cwd=root)
    assert result.code == 0, result
    assert result.out == (
        "profiles/strip.toml:2:10: warning unset-removes-nothing unset 'serve.download_dir' removes nothing: nothing "
        "sets serve.download_dir up to layer 'strip'\n"
        "    layer 'm' sets serve.download_dir later (profiles/m.toml:3:1); an unset removes only what is set up to "
        "its own layer\n"
        "    fix: fix the key, or remove the entry: an unset removes what the layers before it (and its own layer) set\n"
        "0 errors, 1 warning\n"
    )


def test_unsets_of_roles_that_remove_nothing(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "pd.toml": PD + '\n[roles.proxy]\nkind = "command"\ncommand = ["vllm-router"]\n',
            "strip.toml": '[layer]\nunset = ["roles.prefil", "roles.decode.serve.prot", "roles.prefill.command", '
            '"roles.proxy.env.X", "roles.decode.serve.port"]\n',
        }
    )
    result = run("check", "pd+strip", "--format", "json", cwd=root)
    assert result.code == 0, result
    found = [(f["locations"][0]["key"], f["message"], f["fix"]) for f in json.loads(result.out)["findings"]]
    assert {f["severity"] for f in json.loads(result.out)["findings"]} == {"warning"}
    assert found == [
        (
            "layer.unset[0]",
            "unset 'roles.prefil' removes nothing: no layer up to 'strip' declares role 'prefil'",
            "did you mean 'roles.prefill'?",
        ),
        (
            "layer.unset[1]",
            "unset 'roles.decode.serve.prot' removes nothing: role 'decode' has no serve.prot up to layer 'strip'",
            "did you mean 'roles.decode.serve.port'?",
        ),
        (
            "layer.unset[2]",
            "unset 'roles.prefill.command' removes nothing: role 'prefill' has no command up to layer 'strip'",
            "did you mean 'roles.proxy.command'?",
        ),
        (
            "layer.unset[3]",
            "unset 'roles.proxy.env.X' removes nothing: role 'proxy' has no env.X up to layer 'strip'",
            "fix the key, or remove the entry: an unset removes what the layers before it (and its own layer) set",
        ),
    ]


# ---- issue row: conflicts = ["@kv-conector"] ---------------------------------------------------------------

REPLAY = """
[layer]
conflicts = ["@kv-conector"]

[serve]
model = "Qwen/Qwen3-0.6B"
"""


def test_a_misspelt_capability_is_unknown_capability(make_repo: MakeRepo, run: Run) -> None:
    root = _lint_repo(make_repo, {"replay.toml": REPLAY}, [])
    expected_line = (
        "profiles/replay.toml:2:14: error unknown-capability layer.conflicts[0] names no capability: "
        "'@kv-conector' is neither derived by profilekit nor provided by a layer of the repository, so the entry "
        "never matches\n"
        "    fix: did you mean '@kv-connector'?\n"
    )
    checked = run("check", "replay", cwd=root)
    assert (checked.code, checked.out) == (1, expected_line + "1 error, 0 warnings\n"), checked
    linted = run("lint", "--strict", cwd=root)
    assert (linted.code, linted.out) == (1, expected_line + "1 error, 0 warnings\n"), linted


def test_a_capability_provided_by_a_layer_outside_the_stack_is_known(make_repo: MakeRepo, run: Run) -> None:
    root = _lint_repo(
        make_repo,
        {
            "replay.toml": REPLAY.replace("@kv-conector", "@fast-decode").replace("conflicts", "requires"),
            "fast.toml": '[layer]\nprovides = ["fast-decode"]\n',
            "other.toml": REPLAY.replace("@kv-conector", "@kv-connector"),
        },
        [],
    )
    assert run("check", "other", cwd=root).code == 0
    result = run("check", "replay", cwd=root)  # known, but not met in this stack
    assert result.code == 1, result
    assert "error missing-requirement layer 'replay' requires @fast-decode" in result.out
    assert "unknown-capability" not in result.out


def test_an_unknown_capability_without_a_close_name_lists_the_known_ones(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "a.toml": REPLAY.replace("@kv-conector", "@zzz"),
            "fast.toml": '[layer]\nprovides = ["fast-decode"]\n',
        }
    )
    result = run("check", "a", "--format", "json", cwd=root)
    assert result.code == 1, result
    (finding,) = json.loads(result.out)["findings"]
    assert finding["fix"] == (
        "capabilities: @kv-connector, @kv-offload, @replayssm, @speculative-decoding, @prefix-caching, "
        "@pd-disaggregation, @hybrid-model (derived), @fast-decode (provided by layers); or add it to the "
        "`provides` of the layers that bring it"
    )
