"""docs/FORMAT.md: its example repository is valid for profilekit itself, and no Markdown link leaves the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from profilekit.load.models import (
    GpuEntry,
    Hardware,
    K8sSection,
    LayerFile,
    LayerMeta,
    ModelEntry,
    RepoConfig,
    Role,
    SourceSpec,
)
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[1]
FORMAT = ROOT / "docs" / "FORMAT.md"


def _doc_files() -> dict[str, str]:
    """The files FORMAT.md shows: each ```toml block whose first line is `# PATH.toml`."""
    files: dict[str, str] = {}
    for token in MarkdownIt().parse(FORMAT.read_text(encoding="utf-8")):
        if token.type == "fence" and token.info == "toml":
            match = re.match(r"# (\S+\.toml)\n", token.content)
            if match:
                files[match.group(1)] = token.content
    return files


@pytest.fixture
def doc_repo(tmp_path: Path) -> Path:
    for name, text in _doc_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "templates").mkdir()
    return tmp_path


def test_the_doc_shows_a_whole_repository() -> None:
    assert sorted(_doc_files()) == [
        "profilekit.toml",
        "profiles/base.toml",
        "profiles/qwen-pd.toml",
        "profiles/site/box.toml",
    ]


def _block(first_line: str) -> str:
    """The ```toml block of FORMAT.md that starts with `first_line`."""
    for token in MarkdownIt().parse(FORMAT.read_text(encoding="utf-8")):
        if token.type == "fence" and token.info == "toml" and token.content.startswith(first_line):
            return token.content
    raise AssertionError(f"FORMAT.md has no toml block starting with {first_line!r}")


def test_the_annotated_layer_uses_every_table_and_key_of_the_format() -> None:
    import tomllib

    files = _doc_files()
    layer = tomllib.loads(files["profiles/qwen-pd.toml"])
    assert set(layer) == set(LayerFile.model_fields)
    assert set(layer["layer"]) == set(LayerMeta.model_fields)
    assert {part for role in layer["roles"].values() for part in role} == set(Role.model_fields)
    config = tomllib.loads(files["profilekit.toml"])
    # [sources.NAME], [models."ORG/NAME"] and the rule selection have blocks of their own (the example repository
    # has no source to lock, no model file, and no warning to leave out); [services] maps names the user chooses
    # to ports: a section whose keys are not fields
    selection = tomllib.loads(_block("# in profilekit.toml\n[lint]"))["lint"]
    shown = {section: set(keys) for section, keys in config.items() if section != "services"}
    assert shown | {"lint": {*config["lint"], *selection}} == {
        name: set(field.annotation.model_fields)
        for name, field in RepoConfig.model_fields.items()
        if name not in ("sources", "models", "services", "gpus")
    }
    assert RepoConfig.model_validate({"services": config["services"]}).services == {"mooncake-master": 50051}
    sources = tomllib.loads(_block("# in profilekit.toml: the platform team's layers"))["sources"]
    models = tomllib.loads(_block("# in profilekit.toml: the model's config.json"))["models"]
    RepoConfig.model_validate({"sources": sources, "models": models, "lint": selection})
    assert set(sources["platform"]) == set(SourceSpec.model_fields)
    assert {key for entry in models.values() for key in entry} == set(ModelEntry.model_fields)
    gpus = tomllib.loads(_block("# in profilekit.toml: a GPU of the repository's own"))["gpus"]
    assert {key for entry in gpus.values() for key in entry} == set(GpuEntry.model_fields)
    assert set(layer["hardware"]) == set(Hardware.model_fields)
    RepoConfig.model_validate({"gpus": gpus})
    assert set(config["render"]["k8s"]) == set(K8sSection.model_fields)
    text = files["profiles/qwen-pd.toml"]
    assert "${roles.prefill.serve.port}" in text  # references, with their own section of the page
    assert "\nabstract = true" in files["profiles/base.toml"]
    LayerFile.model_validate(layer)


def test_profilekit_finds_no_problem_in_the_docs_repository(doc_repo: Path, run: Run) -> None:
    result = run("--repo", doc_repo, "lint")
    assert (result.code, result.out) == (0, "lint: 3 files, 3 stacks checked, no problems found (vLLM 0.33.0)\n")
    result = run("--repo", doc_repo, "check", "qwen-pd")
    assert (result.code, result.out) == (0, "qwen-pd: no problems found (vLLM 0.33.0)\n")
    result = run("--repo", doc_repo, "explain", "qwen-pd", "roles.decode.serve.max_num_seqs")
    assert result.out.splitlines()[0] == "[decode] serve.max_num_seqs = 128"


def test_the_site_layer_moves_the_ports_and_the_router_follows(doc_repo: Path, run: Run) -> None:
    result = run("--repo", doc_repo, "render", "qwen-pd+site/box", "--role", "proxy", "--print", "--target", "script")
    assert result.code == 0, result
    assert (
        "exec vllm-router \\\n  --vllm-pd-disaggregation \\\n  --prefill http://127.0.0.1:9100 \\\n"
        '  --decode http://127.0.0.1:9200 \\\n  --port 8192 "$@"\n'
    ) in result.out


def _markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode == 0:
        return [ROOT / name for name in listed.stdout.splitlines() if (ROOT / name).is_file()]
    return [p for p in ROOT.rglob("*.md") if not ({".git", ".venv", "build"} & set(p.relative_to(ROOT).parts))]


def _links(path: Path) -> list[str]:
    found: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type in ("link_open", "image"):
                found.append(str(token.attrs.get("href") or token.attrs.get("src") or ""))
            if token.children:
                walk(token.children)

    walk(MarkdownIt().parse(path.read_text(encoding="utf-8")))
    return found


def test_no_markdown_link_points_outside_the_repository() -> None:
    files = _markdown_files()
    assert ROOT / "README.md" in files and FORMAT in files
    outside: list[str] = []
    for path in files:
        for link in _links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", link) or link.startswith("#"):
                continue  # a web address, or an anchor in the same page
            target = (path.parent / link.split("#", 1)[0]).resolve()
            if not target.is_relative_to(ROOT) or not target.exists():
                outside.append(f"{path.relative_to(ROOT)}: {link}")
    assert outside == []


def test_the_link_check_sees_a_link_that_leaves(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    page.write_text("The contract is [CONTRACT.md](../elsewhere/CONTRACT.md), see `[no](../code)`.\n", encoding="utf-8")
    assert _links(page) == ["../elsewhere/CONTRACT.md"]
