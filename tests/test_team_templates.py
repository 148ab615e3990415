"""Team templates for the Python-written targets: vllm-config.yaml.j2, k8s.yaml.j2, kustomization.yaml.j2 and
slurm.sbatch.j2 replace the built-in writers, and a template that fails or renders a file the target cannot
write is a `template-error` naming the template, with nothing written."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import NamedTuple

import kubernetes_validate
import pytest
import yaml

from tests.conftest import MakeRepo, Run

CONFIG = '[vllm]\nversion = "0.33.0"\n[render]\ntemplates = "team-templates"\n'
PD = """
    [serve]
    model = "m"
    [roles.prefill.serve]
    port = 8100
    [roles.decode.serve]
    port = 8200
    [roles.proxy]
    kind = "command"
    command = ["vllm-router", "--port", "8192"]

    [roles.decode]
    kind = "vllm"

    [roles.prefill]
    kind = "vllm"
"""
LAYERS = "# Layers, in merge order: pd (profiles/pd.toml)."
PREVIOUS = {"previous.txt": "an earlier render\n"}
K8S_FIX = "    fix: fix the template so that its output is Kubernetes objects in YAML"
TARGET = {
    "k8s.yaml.j2": "k8s",
    "kustomization.yaml.j2": "k8s",
    "vllm-config.yaml.j2": "vllm-config",
    "slurm.sbatch.j2": "slurm",
}


class Bad(NamedTuple):
    """A team template whose output the target cannot write, and the finding it gives."""

    name: str
    text: str
    message: str  # after `template FILE `
    fix: str


class Broken(NamedTuple):
    """A team template that fails to render, the line it fails at and why."""

    text: str
    line: int
    why: str


def _render(make_repo: MakeRepo, run: Run, tmp_path: Path, name: str, text: str) -> tuple[int, str, Path]:
    repo = make_repo({"pd.toml": PD, f"team-templates/{name}": text}, config=CONFIG)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    for file, content in PREVIOUS.items():
        (out / file).write_text(content, encoding="utf-8")
    result = run("--repo", repo, "render", "pd", "--out", out, "--target", TARGET[name])
    return result.code, result.out + result.err, out


def _unchanged(out: Path) -> bool:
    return {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == PREVIOUS


def test_a_k8s_template_adds_a_label_and_the_manifests_stay_valid(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    template = (
        "{{ header }}# team: {{ name }} has {{ gpus }} GPUs, port {{ port }}, image {{ image }}\n"
        "{% for doc in documents %}"
        '{% set _ = doc.metadata.labels.update({"team.example.com/owner": "inference"}) %}'
        "---\n{{ doc | to_yaml }}"
        "{% endfor %}"
    )
    code, output, out = _render(make_repo, run, tmp_path, "k8s.yaml.j2", template)
    assert code == 0, output
    text = (out / "prefill.k8s.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[1] == LAYERS
    assert "# team: pd-prefill has 1 GPUs, port 8100, image vllm/vllm-openai:v0.33.0\n" in text
    docs = list(yaml.safe_load_all(text))
    assert [doc["metadata"]["labels"]["team.example.com/owner"] for doc in docs] == ["inference", "inference"]
    for doc in docs:
        kubernetes_validate.validate(doc, "1.33", strict=True)
    # the built-in kustomization is still written, with its provenance header
    assert (out / "kustomization.yaml").read_text(encoding="utf-8").splitlines()[1] == LAYERS


def test_a_k8s_template_can_wrap_the_default_yaml_text(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    code, output, out = _render(
        make_repo, run, tmp_path, "k8s.yaml.j2", "{{ header }}# reviewed by the platform team\n{{ yaml }}"
    )
    assert code == 0, output
    text = (out / "decode.k8s.yaml").read_text(encoding="utf-8")
    assert "# reviewed by the platform team\n---\napiVersion: apps/v1\n" in text
    assert text.startswith("# profilekit ")


def test_a_kustomization_template_adds_common_labels(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    template = (
        '{{ header }}{% set _ = document.update({"labels": [{"pairs": {"team": "inference"}}]}) %}'
        "# resources: {{ resources | join(', ') }}\n---\n{{ document | to_yaml }}"
    )
    code, output, out = _render(make_repo, run, tmp_path, "kustomization.yaml.j2", template)
    assert code == 0, output
    text = (out / "kustomization.yaml").read_text(encoding="utf-8")
    assert LAYERS in text.splitlines()
    assert "# resources: decode.k8s.yaml, prefill.k8s.yaml, proxy.k8s.yaml\n" in text
    assert yaml.safe_load(text)["labels"] == [{"pairs": {"team": "inference"}}]
    assert yaml.safe_load(text)["resources"] == ["decode.k8s.yaml", "prefill.k8s.yaml", "proxy.k8s.yaml"]


def test_a_vllm_config_template_adds_a_comment_and_an_option(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    template = "{{ header }}# team: {{ role }} serves {{ model }} from {{ config_file }}\n{{ yaml }}max-num-seqs: 64\n"
    code, output, out = _render(make_repo, run, tmp_path, "vllm-config.yaml.j2", template)
    assert code == 0, output
    text = (out / "prefill.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[1] == LAYERS
    assert "# team: prefill serves m from prefill.yaml\n" in text
    assert yaml.safe_load(text) == {"port": 8100, "max-num-seqs": 64}
    assert sorted(p.name for p in out.iterdir()) == [
        "decode.sh",
        "decode.yaml",
        "manifest.json",
        "prefill.sh",
        "prefill.yaml",
        "previous.txt",
    ]


def test_a_slurm_template_adds_an_sbatch_line(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    code, output, out = _render(
        make_repo, run, tmp_path, "slurm.sbatch.j2", "{{ directives }}#SBATCH --qos=high\n{{ body }}"
    )
    assert code == 0, output
    text = (out / "job.sbatch").read_text(encoding="utf-8")
    lines = text.splitlines()
    directives = [line for line in lines if line.startswith("#SBATCH")]
    assert directives[-1] == "#SBATCH --qos=high"
    assert lines.index("#SBATCH --qos=high") == len(directives)  # still before the first command
    assert LAYERS in lines
    assert subprocess.run(["bash", "-n", str(out / "job.sbatch")], check=False).returncode == 0
    assert (out / "job.sbatch").stat().st_mode & 0o777 == 0o755


# what each template is given, as the fix of a failing one lists it
NAMES = {
    "k8s.yaml.j2": "argv, documents, env, gpu, gpu_resource, gpus, header, image, labels, layers, name, nodes, port, profilekit_version, "
    "role, "
    "side_channel_ports, stack, vllm_version, yaml",
    "kustomization.yaml.j2": "document, header, layers, profilekit_version, resources, stack, vllm_version, yaml",
    "vllm-config.yaml.j2": "config, config_file, header, layers, model, profilekit_version, role, stack, "
    "vllm_version, yaml",
    "slurm.sbatch.j2": "body, directives, gpus, gres, job_name, layers, profilekit_version, roles, script, stack, "
    "vllm_version",
}


@pytest.mark.parametrize(
    "broken",
    [
        Broken("# {{ layers }}\n{% for %}\n", 2, "Expected an expression, got 'end of statement block'"),
        Broken("# {{ layers }}\n\n{{ nope }}\n", 3, "'nope' is undefined"),
        Broken("# {{ layers }}\n{{ 1 // 0 }}\n", 2, "ZeroDivisionError: integer division or modulo by zero"),
    ],
    ids=["syntax", "undefined", "raise"],
)
@pytest.mark.parametrize("name", list(TARGET))
def test_a_failing_template_names_its_line_and_writes_nothing(
    name: str, broken: Broken, make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    code, output, out = _render(make_repo, run, tmp_path, name, broken.text)
    assert code == 1, output
    line = broken.line
    assert output == (
        f"team-templates/{name}:{line}:1: error template-error template team-templates/{name} failed at line "
        f"{line}: {broken.why}\n"
        f"    fix: fix the template; templates can use: {NAMES[name]}\n"
        "1 error, 0 warnings\n"
    )
    assert _unchanged(out)


@pytest.mark.parametrize(
    "bad",
    [
        Bad(
            "k8s.yaml.j2",
            "# {{ role }}\napiVersion: v1\nkind: ConfigMap\nextra: [\n",
            "rendered YAML that does not parse: line 5 of the rendered output (not of the template): "
            "while parsing a flow node: expected the node content, but found '<stream end>'",
            K8S_FIX,
        ),
        Bad(
            "k8s.yaml.j2",
            "{{ yaml }}---\nname: not-an-object\n",
            "rendered YAML document 3 that is not a Kubernetes object (a mapping with apiVersion and kind)",
            K8S_FIX,
        ),
        Bad(
            "kustomization.yaml.j2",
            "resources:\n  - a\n b: c\n",
            "rendered YAML that does not parse: line 3 of the rendered output (not of the template): "
            "while parsing a block mapping: expected <block end>, but found '<block mapping start>'",
            K8S_FIX,
        ),
        Bad(
            "vllm-config.yaml.j2",
            "{{ header }}port: 1\n  bad: [\n",
            "rendered YAML that does not parse: line 6 of the rendered output (not of the template): "
            "mapping values are not allowed here",
            "    fix: fix the template so that its output is one YAML mapping",
        ),
        Bad(
            "vllm-config.yaml.j2",
            "{{ header }}- a list\n",
            "rendered no YAML mapping: the file must be one mapping of keys",
            "    fix: fix the template so that its output is one YAML mapping",
        ),
        Bad(
            "slurm.sbatch.j2",
            "#!/usr/bin/env bash\n# {{ stack }}\nif true; then\n  echo {{ roles | join(' ') | sh }}\n",
            "rendered a script that `bash -n` refuses: line 5 of the rendered output (not of the template): "
            "syntax error: unexpected end of file",
            "    fix: fix the template so that its output passes `bash -n`",
        ),
    ],
    ids=["k8s-yaml", "k8s-not-an-object", "kustomization-yaml", "vllm-config-yaml", "vllm-config-list", "slurm-bash"],
)
def test_output_the_target_cannot_write_is_a_template_error(
    bad: Bad, make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    code, output, out = _render(make_repo, run, tmp_path, bad.name, bad.text)
    assert code == 1, output
    prefix = f"team-templates/{bad.name}:1:1: error template-error template team-templates/{bad.name} "
    assert output == f"{prefix}{bad.message}\n{bad.fix}\n1 error, 0 warnings\n"
    assert _unchanged(out)


def test_a_failing_template_of_one_target_stops_every_target(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({"pd.toml": PD, "team-templates/slurm.sbatch.j2": "{{ 1 // 0 }}\n"}, config=CONFIG)
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "pd", "--out", out, "--target", "script", "--target", "slurm")
    assert result.code == 1, result
    assert result.out.splitlines()[0] == (
        "team-templates/slurm.sbatch.j2:1:1: error template-error template team-templates/slurm.sbatch.j2 "
        "failed at line 1: ZeroDivisionError: integer division or modulo by zero"
    )
    assert not out.exists() or not any(out.iterdir())
    # without the team template the same render writes the launch scripts and the job
    (repo / "team-templates" / "slurm.sbatch.j2").unlink()
    assert run("--repo", repo, "render", "pd", "--out", out, "--target", "script", "--target", "slurm").code == 0
    assert {"prefill.sh", "decode.sh", "proxy.sh", "up.sh", "job.sbatch"} <= {p.name for p in out.iterdir()}


def test_a_layer_name_with_line_breaks_stays_in_the_comments_of_the_k8s_files(tmp_path: Path) -> None:
    """The `# Layers, in merge order:` line of the k8s files escapes what could end a YAML comment."""
    from dataclasses import replace

    from profilekit.render.stack import render_stack
    from profilekit.session import Session

    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "pd.toml").write_text(textwrap.dedent(PD), encoding="utf-8")
    session = Session.open(repo=root, vllm_version=None, cwd=root)
    plain = session.stack("pd")
    odd = replace(plain, layers=[replace(layer, name="pd\nkind: Secret\r#\u2028x") for layer in plain.layers])
    expected, problems = render_stack(plain, version="0.33.0", catalogue=session.catalogue, targets=("k8s",))
    files, problems = render_stack(odd, version="0.33.0", catalogue=session.catalogue, targets=("k8s",))
    assert problems == []
    for name in ("prefill.k8s.yaml", "decode.k8s.yaml", "proxy.k8s.yaml", "kustomization.yaml"):
        lines = [line for line in files[name].text.splitlines() if "kind: Secret" in line]
        assert lines == ["# Layers, in merge order: pd\\nkind: Secret\\r#\\u2028x (profiles/pd.toml)."], name
        assert list(yaml.safe_load_all(files[name].text)) == list(yaml.safe_load_all(expected[name].text)), name
    assert [layer["name"] for layer in json.loads(files["manifest.json"].text)["layers"]] == [
        "pd\nkind: Secret\r#\u2028x"
    ]
