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
