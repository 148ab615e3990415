"""Defects the pipeline fuzzer (tests/fuzz/test_pipeline.py) found, each pinned by the smallest case it shrank to."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MakeRepo, Run

WARNING = (
    "profiles/a.toml:2:10: warning unset-removes-nothing unset 'serve.max_num_seqs' removes nothing: "
    "nothing sets serve.max_num_seqs up to layer 'a'\n"
    "    fix: fix the key, or remove the entry: an unset removes what the layers before it (and its own layer) set\n"
)
UNSET_NOTHING = {"a.toml": '[layer]\nunset = ["serve.max_num_seqs"]\n[serve]\nmodel = "org/m"\n'}


def test_a_composition_warning_does_not_stop_render(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    # check exited 0 for this stack while render exited 1 and wrote nothing
    repo = make_repo(UNSET_NOTHING)
    out = tmp_path / "out"
    checked = run("--repo", repo, "check", "a")
    assert checked.code == 0, checked
    assert checked.out == WARNING + "0 errors, 1 warning\n"
    rendered = run("--repo", repo, "render", "a", "--out", out)
    assert rendered.code == 0, rendered
    assert rendered.err == WARNING
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "serve.env", "serve.sh"]


def test_a_composition_warning_does_not_stop_show_or_explain(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo(UNSET_NOTHING)
    shown = run("--repo", repo, "show", "a", "--format", "json")
    assert shown.code == 0, shown
    assert '"model": "org/m"' in shown.out
    assert shown.err == WARNING + "0 errors, 1 warning\n"
    explained = run("--repo", repo, "explain", "a", "serve.model")
    assert explained.code == 0, explained
    assert explained.err == WARNING + "0 errors, 1 warning\n"


def test_a_composition_error_still_stops_render(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({"a.toml": '[layer]\nunset = ["serve.max_num_seqs"]\n[serve]\nmodel = "org/m"\nnope = 1\n'})
    out = tmp_path / "out"
    rendered = run("--repo", repo, "render", "a", "--out", out)
    assert rendered.code == 1, rendered
    assert not out.exists()


def test_a_model_named_like_an_unknown_users_home_is_not_an_internal_error(make_repo: MakeRepo, run: Run) -> None:
    # pathlib's expanduser raised RuntimeError on `~a` (no user `a`): exit 3
    repo = make_repo({"a.toml": '[serve]\nmodel = "~a"\n'})
    result = run("--repo", repo, "check", "a")
    assert result.code == 0, result
    assert result.out == "a: no problems found (vLLM 0.33.0)\n"


def test_repo_under_an_unknown_users_home_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("--repo", "~no-such-user-here", "list", cwd=tmp_path)
    assert result.code == 2, result
    assert result.err == (
        "profilekit: error: no profilekit.toml in ~no-such-user-here\n"
        "  hint: pass the folder that holds profilekit.toml (the repository root)\n"
    )


RESERVED = {"a.toml": '[serve]\nmodel = "org/m"\n[env]\nUID = "1000"\nRANDOM = "4"\nOPTIONS = "x"\n'}


def test_env_names_bash_keeps_for_itself_are_errors(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    # `export UID=...` stopped the rendered script; RANDOM reached the process as a random number
    repo = make_repo(RESERVED)
    checked = run("--repo", repo, "check", "a")
    assert checked.code == 1, checked
    assert checked.out == (
        "profiles/a.toml:4:1: error env-bash-reserved env.UID: UID is read-only in bash: exporting it stops the "
        "launch script\n"
        "    in stack a, role serve\n"
        "    fix: rename UID: bash keeps it for itself, so no launch script can pass it to the process\n"
        "profiles/a.toml:5:1: error env-bash-reserved env.RANDOM: RANDOM is set by bash itself: the process would "
        "get bash's value, not this one\n"
        "    in stack a, role serve\n"
        "    fix: rename RANDOM: bash keeps it for itself, so no launch script can pass it to the process\n"
        "2 errors, 0 warnings\n"
    )
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "a", "--out", out).code == 1
    assert not out.exists()


def test_env_names_bash_passes_through_are_fine(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({"a.toml": '[serve]\nmodel = "org/m"\n[env]\nPWD = "/srv"\nIFS = ":"\nHOME = "/h"\n'})
    result = run("--repo", repo, "check", "a")
    assert result.code == 0, result


def test_a_secret_named_like_a_variable_bash_sets_is_an_error(make_repo: MakeRepo, run: Run) -> None:
    # bash sets PWD when it starts: the process got the folder, not the secret from the launching environment
    repo = make_repo({"a.toml": '[serve]\nmodel = "org/m"\n[env]\nPWD = { secret = true }\n'})
    result = run("--repo", repo, "check", "a")
    assert result.code == 1, result
    assert result.out == (
        "profiles/a.toml:4:9: error env-bash-reserved env.PWD: PWD is set by bash itself: the process would get "
        "bash's value, not the secret\n"
        "    in stack a, role serve\n"
        "    fix: rename PWD: bash keeps it for itself, so no launch script can pass it to the process\n"
        "1 error, 0 warnings\n"
    )
