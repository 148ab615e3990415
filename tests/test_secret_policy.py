"""One definition of a secret (redact.py), one answer everywhere: a sweep of env names and values through
`import` (kept out of the layer as `{ secret = true }`), the `literal-secret` rule (refused in a layer), the
redaction of what profilekit prints (`show`), and the rendered files (never written there).

A literal value gets the same answer from every one of them; a value that is a reference (`$HF_TOKEN`) is kept
out by `import` for its name alone, and is no literal secret in a layer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from profilekit.importing.launch import import_launch
from profilekit.redact import is_secret, is_secret_entry
from profilekit.vllm.catalogue import load_catalogue
from tests.conftest import MakeRepo, Run

NAMES = [
    "HF_TOKEN",
    "DB_PASSWD",
    "DB_PASSWORD",
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "MY_SECRET",
    "GOOGLE_CREDENTIALS",
    "CACHE_KEY",  # a cache key is no credential
    "TOKENIZERS_PARALLELISM",
    "VLLM_LOGGING_LEVEL",
    "MONKEY",
]
VALUES = ["hf_" + "Ab1" * 12, "sk-" + "x9" * 12, "s3cr3t-value", "INFO"]
CASES = [(name, value) for name in NAMES for value in VALUES]


def _imported_as_secret(tmp_path: Path, name: str, value: str) -> bool:
    words = [f"{name}={value}", "vllm", "serve", "Qwen/Qwen3-0.6B"]
    imported = import_launch(tmp_path, words, name="x", catalogue=load_catalogue("0.33.0"), cwd=tmp_path)
    assert name in imported.env
    assert (value in imported.text) is (imported.env[name] != {"secret": True})
    return bool(imported.env[name] == {"secret": True})


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}-{v[:6]}" for n, v in CASES])
def test_every_command_gives_one_answer(make_repo: MakeRepo, run: Run, tmp_path: Path, name: str, value: str) -> None:
    expected = is_secret(name, value)
    assert is_secret_entry(name, value) is expected  # for a literal value the two tests agree
    assert _imported_as_secret(tmp_path, name, value) is expected
    layer = f'[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[env]\n{name} = "{value}"\n'
    repo = make_repo({"s.toml": layer})
    checked = run("--repo", repo, "check", "s", "--format", "json")
    assert ('"rule": "literal-secret"' in checked.out) is expected, checked
    assert value not in checked.out + checked.err  # a finding never repeats the value
    shown = run("--repo", repo, "show", "s")
    assert (value not in shown.out) is expected, shown
    out = tmp_path / "out"
    rendered = run("--repo", repo, "render", "s", "--out", out)
    assert (rendered.code != 0) is expected, rendered  # literal-secret stops the render: nothing is written
    if expected:
        assert not out.exists()
    else:
        assert value in (out / "serve.env").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["HF_TOKEN", "DB_PASSWD", "OPENAI_API_KEY"])
def test_a_reference_is_kept_out_by_import_for_its_name_and_stands_in_a_layer(
    make_repo: MakeRepo, run: Run, tmp_path: Path, name: str
) -> None:
    assert _imported_as_secret(tmp_path, name, "$" + name)
    assert not is_secret(name, "$" + name)
    repo = make_repo({"s.toml": f'[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[env]\n{name} = "/run/secrets/x"\n'})
    assert '"rule": "literal-secret"' not in run("--repo", repo, "check", "s", "--format", "json").out
