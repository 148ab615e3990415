"""`profilekit doctor`: the installed release, plugins read from real installed distributions, and the shell's
variables laid over real stacks of the example repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from profilekit.vllm.environ import is_relevant
from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_up import NVIDIA_SMI, ROCM_SMI

TOKEN = "hf_" + "a1B2c3D4" * 5  # shaped like a Hugging Face token: never printed

V2_SET = "  VLLM_USE_V2_MODEL_RUNNER=1\n    picks Model Runner V2 (1) or V1 (0); unset, vLLM decides from the config\n"


def replayssm_finding(stack: str) -> str:
    """replayssm-model-runner on the example repo's replayssm layer with the shell's VLLM_USE_V2_MODEL_RUNNER=1."""
    return (
        "    profiles/replayssm.toml:9:1: error replayssm-model-runner use_replayssm = true with mamba_backend = "
        '"triton" and VLLM_USE_V2_MODEL_RUNNER = "1" selects Model Runner V2; vLLM 0.33.0 refuses to start: '
        '"Triton ReplaySSM requires Model Runner V1; use --mamba-backend flashinfer or Model Runner V1"\n'
        f"        in stack {stack}, role serve\n"
        "        profiles/replayssm.toml:10:1: serve.mamba_backend (layer replayssm)\n"
        '        fix: set env VLLM_USE_V2_MODEL_RUNNER = "0" (Model Runner V1), or mamba_backend = "flashinfer"\n'
    )


NO_GPU_TOOLS = "GPUs of this host (nvidia-smi, rocm-smi)\n  nvidia-smi is not on PATH\n  rocm-smi is not on PATH\n\n"


def no_gpu_declared(stack: str) -> str:
    return (
        f"GPUs {stack} declares ([hardware] gpu), against this host\n"
        "  role serve declares no GPU: nothing to compare (docs/HARDWARE.md)\n\n"
    )


PLUGIN_GROUP_TEXT = (
    "    runs in every vLLM process (API server, engine core, workers) at start-up; it can register a KV connector, "
    "a model or an attention backend, or change defaults\n"
)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A shell with none of the test machine's own vLLM-relevant variables (CUDA_VISIBLE_DEVICES, ...), and a PATH
    without the machine's own nvidia-smi or rocm-smi (tests/test_doctor_gpus.py puts stand-ins there)."""
    for name in list(os.environ):
        if is_relevant(name) or name == "HF_TOKEN":
            monkeypatch.delenv(name)
    (tmp_path / "no-gpu-tools").mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(tmp_path / "no-gpu-tools"))
    return monkeypatch


def test_nothing_set_is_exit_0(shell: pytest.MonkeyPatch, run: Run) -> None:
    result = run("--repo", REPO_ROOT, "doctor")
    assert result.code == 0, result
    assert result.out == (
        "profilekit doctor: this machine against vLLM 0.33.0\n"
        "\n"
        "vLLM release\n"
        "  not installed here (the checks describe vLLM 0.33.0)\n"
        "\n"
        "vLLM plugins (read from package metadata; none was loaded)\n"
        "  none installed\n"
        "\n"
        "environment (variables that change what vLLM runs)\n"
        "  none set\n"
        "\n"
        "GPUs of this host (nvidia-smi, rocm-smi)\n"
        "  nvidia-smi is not on PATH\n"
        "  rocm-smi is not on PATH\n"
        "\n"
        "nothing here changes the effective configuration\n"
    )


def test_a_role_that_sets_the_variable_wins_over_the_shell(shell: pytest.MonkeyPatch, run: Run) -> None:
    """The example repo's replayssm layer pins VLLM_USE_V2_MODEL_RUNNER = "0": the launch script exports it over
    the shell's 1, so the shell changes nothing."""
    shell.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    shell.setenv("HF_TOKEN", TOKEN)
    result = run("--repo", REPO_ROOT, "doctor", "nemotron-replayssm")
    assert result.code == 0, result
    assert result.out.split("environment (variables that change what vLLM runs)\n")[1] == (
        V2_SET + "    ignored by role serve: its env sets VLLM_USE_V2_MODEL_RUNNER itself\n"
        "\n"
        + NO_GPU_TOOLS
        + no_gpu_declared("nemotron-replayssm")
        + "findings the shell's environment adds to nemotron-replayssm\n"
        "  none\n"
        "\n"
        "secrets the stack takes from the launching shell (values never shown)\n"
        "  secret HF_TOKEN (role serve): set in this shell\n"
        "\n"
        "nothing here changes the effective configuration\n"
    )
    assert TOKEN not in result.out + result.err


def _replayssm_repo(make_repo: MakeRepo) -> Path:
    """The example repo's nemotron-replayssm stack without the replayssm layer's [env] (its V1 pin), and `ext`:
    that stack with pipeline parallelism under external_launcher, a feature V2 lacks, so vLLM picks V1 itself."""
    files = {
        name: (REPO_ROOT / "profiles" / name).read_text(encoding="utf-8")
        for name in ("base.toml", "models/nemotron-h-8b.toml", "nemotron-replayssm.toml")
    }
    files["replayssm.toml"] = (REPO_ROOT / "profiles/replayssm.toml").read_text(encoding="utf-8").split("[env]")[0]
    files["ext.toml"] = """
        [layer]
        description = "ReplaySSM with pipeline parallelism under an external launcher"
        extends = ["nemotron-replayssm"]

        [serve]
        distributed_executor_backend = "external_launcher"
        pipeline_parallel_size = 2
        """
    return make_repo(files)


def test_shell_variable_trips_rules_for_a_role(shell: pytest.MonkeyPatch, make_repo: MakeRepo, run: Run) -> None:
    root = _replayssm_repo(make_repo)
    assert run("--repo", root, "check", "ext").out == "ext: no problems found (vLLM 0.33.0)\n"
    shell.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    shell.setenv("HF_TOKEN", TOKEN)
    result = run("--repo", root, "doctor", "ext")
    assert result.code == 1, result
    assert result.out.split("environment (variables that change what vLLM runs)\n")[1] == (
        V2_SET + "    reaches role serve\n"
        "\n" + NO_GPU_TOOLS + no_gpu_declared("ext") + "findings the shell's environment adds to ext\n"
        "  because of VLLM_USE_V2_MODEL_RUNNER in role serve:\n"
        '    profiles/ext.toml:6:1: error model-runner-v2-unsupported VLLM_USE_V2_MODEL_RUNNER = "1" asks for Model '
        'Runner V2 with pipeline parallelism with external_launcher; vLLM 0.33.0 refuses to start: "Model Runner V2 '
        'does not yet support: pipeline parallelism with external_launcher"\n'
        "        in stack ext, role serve\n"
        "        profiles/ext.toml:7:1: serve.pipeline_parallel_size (layer ext)\n"
        '        fix: set VLLM_USE_V2_MODEL_RUNNER = "0" (or leave it unset: vLLM then picks V1 for this configuration), '
        "or drop the feature\n"
        "        or: unset VLLM_USE_V2_MODEL_RUNNER in the shell that launches it\n"
        "  because of VLLM_USE_V2_MODEL_RUNNER in role serve:\n"
        + replayssm_finding("ext")
        + "        or: unset VLLM_USE_V2_MODEL_RUNNER in the shell that launches it\n"
        "\n"
        "secrets the stack takes from the launching shell (values never shown)\n"
        "  secret HF_TOKEN (role serve): set in this shell\n"
        "\n"
        "3 things change the effective configuration: finding model-runner-v2-unsupported (role serve); "
        "finding replayssm-model-runner (role serve); variable VLLM_USE_V2_MODEL_RUNNER\n"
    )
    assert TOKEN not in result.out + result.err


def test_a_finding_the_stack_has_anyway_says_so(shell: pytest.MonkeyPatch, make_repo: MakeRepo, run: Run) -> None:
    """Without its V1 pin, nemotron-replayssm already breaks replayssm-model-runner (vLLM picks V2 on a GPU);
    the shell's 1 changes the message, and unsetting it would not help."""
    root = _replayssm_repo(make_repo)
    shell.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    result = run("--repo", root, "doctor", "nemotron-replayssm")
    assert result.code == 1, result
    assert result.out.split("findings the shell's environment adds to nemotron-replayssm\n")[1].split("\n\n")[0] == (
        "  because of VLLM_USE_V2_MODEL_RUNNER in role serve:\n"
        + replayssm_finding("nemotron-replayssm")
        + "        (without the shell's value the stack breaks replayssm-model-runner too: see profilekit check)"
    )


def test_shell_breaks_a_clean_stack_per_role_in_json(shell: pytest.MonkeyPatch, run: Run) -> None:
    """qwen-disaggregated+site/h100 checks clean; expandable segments from the shell reach both NIXL roles."""
    assert run("--repo", REPO_ROOT, "check", "qwen-disaggregated+site/h100").code == 0
    shell.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    result = run("--repo", REPO_ROOT, "doctor", "qwen-disaggregated+site/h100", "--format", "json")
    assert result.code == 1, result
    data = json.loads(result.out)
    assert data["environment"] == [
        {
            "name": "PYTORCH_CUDA_ALLOC_CONF",
            "secret": False,
            "does": "PyTorch's CUDA allocator settings; expandable_segments:True is refused with any KV connector "
            "unless the cumem allocator is on",
            "value": "expandable_segments:True",
            "overridden_by": [],
            "reaches": ["prefill", "decode", "proxy"],
        }
    ]
    assert [(f["rule"], f["role"], f["variables"], f["also_without_shell"]) for f in data["findings"]] == [
        ("kv-expandable-segments", "decode", ["PYTORCH_CUDA_ALLOC_CONF"], False),
        ("kv-expandable-segments", "prefill", ["PYTORCH_CUDA_ALLOC_CONF"], False),
    ]
    assert data["findings"][1]["message"] == (
        'PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True" beside KV connector NixlConnector (kv_role '
        '"kv_producer", serve.kv_transfer_config); vLLM 0.33.0 refuses to start: "KV connector NixlConnector is '
        "incompatible with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless enable_cumem_allocator is also "
        'enabled"'
    )
    # the shell's value has no file: the locations are the layer's, and the variable is named instead
    assert all(loc["file"] == "profiles/disaggregated.toml" for f in data["findings"] for loc in f["locations"])
    assert data["changes"] == [
        "finding kv-expandable-segments (role decode)",
        "finding kv-expandable-segments (role prefill)",
        "variable PYTORCH_CUDA_ALLOC_CONF",
    ]


def test_unknown_name_gets_did_you_mean_and_secrets_show_by_name_only(shell: pytest.MonkeyPatch, run: Run) -> None:
    shell.setenv("VLLM_USE_V2_MODEL_RUNNR", "1")
    shell.setenv("VLLM_API_KEY", "s3cr3t-value-of-the-api")
    shell.setenv("UCX_TLS", TOKEN)  # a token-shaped value under any name is a secret too
    shell.setenv("HF_TOKEN", TOKEN)  # not a variable doctor lists, and never printed
    result = run("--repo", REPO_ROOT, "doctor")
    assert result.code == 1, result
    assert result.out.split("environment (variables that change what vLLM runs)\n")[1] == (
        "  UCX_TLS (secret-looking value, not shown)\n"
        "    read by UCX, the transport NIXL moves KV blocks over in P/D (not read by vLLM itself)\n"
        "  VLLM_API_KEY (secret-looking value, not shown)\n"
        "    the API key the server requires from clients\n"
        "  VLLM_USE_V2_MODEL_RUNNR=1\n"
        "    unknown: vLLM 0.33.0 has no environment variable VLLM_USE_V2_MODEL_RUNNR; "
        "did you mean 'VLLM_USE_V2_MODEL_RUNNER'?\n"
        "\n" + NO_GPU_TOOLS + "3 things change the effective configuration: variable UCX_TLS; variable VLLM_API_KEY; "
        "variable VLLM_USE_V2_MODEL_RUNNR\n"
    )
    json_out = run("--repo", REPO_ROOT, "doctor", "--format", "json").out
    for text in (result.out, result.err, json_out):
        assert TOKEN not in text
        assert "s3cr3t" not in text


def test_renamed_variable_says_what_to_write(shell: pytest.MonkeyPatch, run: Run) -> None:
    shell.setenv("VLLM_KIMI_K3_GEMM_RS", "1")
    result = run("--repo", REPO_ROOT, "doctor", "--format", "json")
    assert json.loads(result.out)["environment"][0]["unknown"] == (
        "vLLM 0.33.0 has no environment variable VLLM_KIMI_K3_GEMM_RS (vLLM 0.31.0 renamed it VLLM_ENABLE_GEMM_RS); "
        "write VLLM_ENABLE_GEMM_RS instead"
    )


def test_usage_errors_are_exit_2(shell: pytest.MonkeyPatch, run: Run) -> None:
    assert run("--repo", REPO_ROOT, "doctor", "--format", "yaml").code == 2
    result = run("--repo", REPO_ROOT, "doctor", "nemotron-replayssn")
    assert result.code == 2
    assert "did you mean 'nemotron-replayssm'?" in result.err


# ---- real installed distributions in a throwaway venv ----------------------------------------------------------


def _distribution(folder: Path, name: str, version: str, extra: str, *, module: bool) -> Path:
    """A folder pip builds with hatchling into the distribution `name` at `version`."""
    folder.mkdir()
    pyproject = (
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n\n{extra}'
    )
    (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    if module:
        (folder / name).mkdir()
        # importing the plugin would stop the process: doctor must read its metadata only
        (folder / name / "__init__.py").write_text('raise SystemExit("plugin imported")\n', encoding="utf-8")
    return folder


def _venv(base: Path, *distributions: Path) -> Path:
    """A venv holding `distributions`, seeing profilekit and its dependencies through a .pth file that names
    this interpreter's import path; the distributions are built with hatchling (test extras), offline."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "profilekit-test.pth").write_text("\n".join(p for p in sys.path if p) + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-build-isolation"]
    subprocess.run([*pip, *map(str, distributions)], check=True, capture_output=True)
    return python


def _fake_vllm(base: Path, version: str) -> Path:
    """A `vllm` distribution with no module at all: only its version matters."""
    extra = "[tool.hatch.build.targets.wheel]\nbypass-selection = true\n"
    return _distribution(base / "vllm", "vllm", version, extra, module=False)


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding a vLLM general plugin and a `vllm` distribution at 0.32.0."""
    base = tmp_path_factory.mktemp("doctor-venv")
    plugin = _distribution(
        base / "kvinject",
        "kvinject",
        "0.1.0",
        '[project.entry-points."vllm.general_plugins"]\nkvinject = "kvinject:register"\n',
        module=True,
    )
    return _venv(base, plugin, _fake_vllm(base, "0.32.0"))


def _doctor(python: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "profilekit", "--repo", str(REPO_ROOT), "doctor", *args],
        capture_output=True,
        text=True,
        check=False,
        # PATH: the venv's own bin, so no nvidia-smi or rocm-smi of the test machine is listed
        env={"PATH": str(python.parent), "HOME": os.environ.get("HOME", "/"), **(env or {})},
    )


def test_installed_plugin_and_release_mismatch(plugin_venv: Path) -> None:
    proc = _doctor(plugin_venv)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout == (
        "profilekit doctor: this machine against vLLM 0.33.0\n"
        "\n"
        "vLLM release\n"
        "  installed 0.32.0, but the checks describe vLLM 0.33.0\n"
        "    fix: install vllm==0.33.0; or target what is installed ([vllm] version or --vllm-version)\n"
        "\n"
        "vLLM plugins (read from package metadata; none was loaded)\n"
        "  vllm.general_plugins: kvinject = kvinject:register (from kvinject 0.1.0)\n"
        f"{PLUGIN_GROUP_TEXT}"
        "\n"
        "environment (variables that change what vLLM runs)\n"
        "  none set\n"
        "\n" + NO_GPU_TOOLS + "2 things change the effective configuration: plugin kvinject (vllm.general_plugins); "
        "vLLM 0.32.0 installed, 0.33.0 targeted\n"
    )


def test_vllm_plugins_leaving_the_plugin_out_and_the_matching_release(plugin_venv: Path) -> None:
    proc = _doctor(plugin_venv, "--vllm-version", "0.32.0", env={"VLLM_PLUGINS": "other"})
    assert proc.returncode == 1, proc.stdout  # VLLM_PLUGINS is itself a variable that reaches every launch
    assert proc.stdout == (
        "profilekit doctor: this machine against vLLM 0.32.0\n"
        "\n"
        "vLLM release\n"
        "  installed 0.32.0: the release the checks describe\n"
        "\n"
        "vLLM plugins (read from package metadata; none was loaded)\n"
        "  vllm.general_plugins: kvinject = kvinject:register (from kvinject 0.1.0)\n"
        f"{PLUGIN_GROUP_TEXT}"
        "    not loaded: VLLM_PLUGINS does not name it\n"
        "\n"
        "environment (variables that change what vLLM runs)\n"
        "  VLLM_PLUGINS=other\n"
        "    names the plugins vLLM loads, comma-separated (unset: all of them; empty: none)\n"
        "\n" + NO_GPU_TOOLS + "1 thing changes the effective configuration: variable VLLM_PLUGINS\n"
    )


def test_doctor_is_never_answered_from_the_cache(tmp_path: Path) -> None:
    """The cache keys a run by its files, not the environment: a cached doctor would repeat a stale shell."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "PROFILEKIT_CACHE_DIR": str(tmp_path)}
    outputs = []
    for value in ("a", "b", "b"):
        proc = subprocess.run(
            [sys.executable, "-m", "profilekit", "--repo", str(REPO_ROOT), "doctor", "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
            env={**env, "VLLM_PLUGINS": value},
        )
        outputs.append(json.loads(proc.stdout)["environment"][0]["value"])
    assert outputs == ["a", "b", "b"]


def test_values_no_env_file_could_hold_are_no_finding_when_the_shell_gives_them(
    shell: pytest.MonkeyPatch, run: Run
) -> None:
    """env-unrepresentable judges the env files profilekit writes; the shell's value is written to none."""
    shell.setenv("VLLM_LOGGING_LEVEL", "a'$b")
    result = run("--repo", REPO_ROOT, "doctor", "qwen-disaggregated+site/h100", "--format", "json")
    data = json.loads(result.out)
    assert data["findings"] == []
    assert data["changes"] == ["variable VLLM_LOGGING_LEVEL"]  # it reaches the proxy, whose env does not set it
    assert [(v["overridden_by"], v["reaches"]) for v in data["environment"]] == [(["prefill", "decode"], ["proxy"])]


def test_outside_a_repository_is_a_usage_error(shell: pytest.MonkeyPatch, run: Run, tmp_path: Path) -> None:
    result = run("doctor", cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("profilekit: error: no profile repository found")


def test_installed_release_profilekit_does_not_know(tmp_path: Path) -> None:
    python = _venv(tmp_path, _fake_vllm(tmp_path, "0.26.0+cu128"))
    proc = _doctor(python)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.split("vLLM plugins")[0] == (
        "profilekit doctor: this machine against vLLM 0.33.0\n"
        "\n"
        "vLLM release\n"
        "  installed 0.26.0+cu128, but the checks describe vLLM 0.33.0\n"
        "    fix: install vllm==0.33.0; profilekit has no rules for 0.26.0+cu128 (it knows 0.27.0, 0.27.1, 0.28.0, "
        "0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0)\n"
        "\n"
    )


# ---- the host's GPUs against the stack's declared hardware (issue 27, item 6); stand-in nvidia-smi and rocm-smi
# of tests/test_up.py ----

H100 = "NVIDIA H100 80GB HBM3"
STACK = "qwen-disaggregated+site/h100"  # prefill and decode, one H100 each


def _tools(shell: pytest.MonkeyPatch, tmp_path: Path, gpus: list[str], *, rocm: bool = False) -> None:
    folder = tmp_path / "gpu-tools"
    folder.mkdir(exist_ok=True)
    name, text = ("rocm-smi", ROCM_SMI) if rocm else ("nvidia-smi", NVIDIA_SMI)
    (folder / name).write_text(text, encoding="utf-8")
    (folder / name).chmod(0o755)
    if not (folder / "bash").exists():  # the stand-ins' interpreter; nothing else of the machine is on PATH
        (folder / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    shell.setenv("PATH", str(folder))
    shell.setenv("STUB_GPUS", "\n".join(gpus))


def _section(out: str, title: str) -> str:
    return out.split(title + "\n", 1)[1].split("\n\n", 1)[0]


def test_doctor_lists_the_hosts_gpus_with_the_catalogue_gpu_each_is(
    shell: pytest.MonkeyPatch, run: Run, tmp_path: Path
) -> None:
    _tools(shell, tmp_path, [H100, H100, "NVIDIA A800 80GB PCIe"])
    result = run("--repo", REPO_ROOT, "doctor")
    assert result.code == 0, result
    assert _section(result.out, "GPUs of this host (nvidia-smi, rocm-smi)") == (
        "  nvidia-smi: 2 x NVIDIA H100 80GB HBM3 (H100-SXM-80GB of the catalogue)\n"
        "  nvidia-smi: 1 x NVIDIA A800 80GB PCIe (no GPU of the catalogue: declare it in [gpus])\n"
        "  rocm-smi is not on PATH"
    )


def test_a_host_with_the_declared_gpus_changes_nothing(shell: pytest.MonkeyPatch, run: Run, tmp_path: Path) -> None:
    _tools(shell, tmp_path, [H100] * 8)
    result = run("--repo", REPO_ROOT, "doctor", STACK)
    assert result.code == 0, result
    assert _section(result.out, f"GPUs {STACK} declares ([hardware] gpu), against this host") == (
        "  2 x H100-SXM-80GB ('NVIDIA H100 80GB HBM3') for roles prefill, decode: this host has 8"
    )


def test_a_host_without_the_declared_gpus_is_a_change_with_a_fix(
    shell: pytest.MonkeyPatch, run: Run, tmp_path: Path
) -> None:
    _tools(shell, tmp_path, ["NVIDIA L40S", H100])
    result = run("--repo", REPO_ROOT, "doctor", STACK)
    assert result.code == 1, result
    assert _section(result.out, f"GPUs {STACK} declares ([hardware] gpu), against this host") == (
        "  2 x H100-SXM-80GB ('NVIDIA H100 80GB HBM3') for roles prefill, decode: this host has 1\n"
        "    fix: run the stack on a host with them, or declare the GPU this host has ([hardware] gpu)"
    )
    assert result.out.endswith(
        "1 thing changes the effective configuration: GPU H100-SXM-80GB: the roles need 2, this host has 1\n"
    )
    data = json.loads(run("--repo", REPO_ROOT, "doctor", STACK, "--format", "json").out)
    assert data["gpus"] == [
        {"tool": "nvidia-smi", "name": "NVIDIA L40S", "gpu": "L40S"},
        {"tool": "nvidia-smi", "name": H100, "gpu": "H100-SXM-80GB"},
    ]
    assert data["declared_gpus"] == [
        {
            "gpu": "H100-SXM-80GB",
            "device": H100,
            "need": 2,
            "roles": ["prefill", "decode"],
            "tool": "nvidia-smi",
            "have": 1,
            "problem": "",
        }
    ]


def test_a_failing_tool_says_why_nothing_was_compared(shell: pytest.MonkeyPatch, run: Run, tmp_path: Path) -> None:
    _tools(shell, tmp_path, [])
    shell.setenv("STUB_SMI_FAILS", "1")
    result = run("--repo", REPO_ROOT, "doctor", STACK)
    assert result.code == 0, result
    assert _section(result.out, "GPUs of this host (nvidia-smi, rocm-smi)") == (
        "  nvidia-smi failed: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
        "  rocm-smi is not on PATH"
    )
    assert "for roles prefill, decode: not compared: nvidia-smi failed: NVIDIA-SMI has failed" in result.out


def test_rocm_gpus_are_listed_by_rocm_smi_and_compared(
    shell: pytest.MonkeyPatch, make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "app.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 4\n',
            "mi300x.toml": '[layer]\nabstract = true\n\n[hardware]\ngpu = "MI300X"\n',
        }
    )
    _tools(shell, tmp_path, ["AMD Instinct MI300X OAM"] * 8, rocm=True)
    result = run("--repo", repo, "doctor", "app+mi300x")
    assert result.code == 0, result
    assert _section(result.out, "GPUs of this host (nvidia-smi, rocm-smi)") == (
        "  nvidia-smi is not on PATH\n  rocm-smi: 8 x AMD Instinct MI300X OAM (MI300X of the catalogue)"
    )
    assert "  4 x MI300X ('AMD Instinct MI300X') for role serve: this host has 8\n" in result.out
