"""The k8s and slurm targets ask for the GPU a role declares (issue 27, item 5; render/gpus.py, docs/HARDWARE.md).

k8s: the vendor's device-plugin resource and a node selector on the vendor labeller's product label, every
manifest valid for Kubernetes 1.33 (kubernetes-validate, strict). slurm: `--gres=gpu:TYPE:N`, TYPE as SLURM's
NVML detection names the device; the job is submitted to the real test cluster (tools/slurm/local-cluster.sh),
whose GPUs are typed as H100s: tests/test_slurm.py submits a job for H100s, which runs, and one for B200s, which
SLURM itself refuses.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_k8s import _validate_all
from tests.test_slurm import _static_checks

ONE = """
    [serve]
    model = "Qwen/Qwen3-0.6B"
    tensor_parallel_size = 2
"""
SITE = '[layer]\nabstract = true\n\n[hardware]\ngpu = "{gpu}"\ngpus_per_node = 8\n'


def _deployment(out: Path, name: str) -> dict[str, object]:
    docs = list(yaml.safe_load_all((out / name).read_text(encoding="utf-8")))
    return dict(docs[0])


def _pod_spec(out: Path, name: str) -> dict[str, object]:
    spec = _deployment(out, name)["spec"]
    assert isinstance(spec, dict)
    return dict(spec["template"]["spec"])


def _render(run: Run, repo: Path, stack: str, out: Path, target: str) -> str:
    result = run("--repo", repo, "render", stack, "--out", out, "--target", target)
    assert result.code == 0, result
    return result.err


def test_the_example_h100_stack_asks_kubernetes_for_h100s(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated+site/h100", tmp_path, "k8s")
    _validate_all(tmp_path)
    for role in ("prefill", "decode"):
        spec = _pod_spec(tmp_path, f"{role}.k8s.yaml")
        assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}  # type: ignore[index]
        text = (tmp_path / f"{role}.k8s.yaml").read_text(encoding="utf-8")
        assert (
            "# 1 x H100-SXM-80GB (nvidia.com/gpu); node selector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 "
            "(the label NVIDIA GPU feature discovery sets)\n"
        ) in text
    proxy = _pod_spec(tmp_path, "proxy.k8s.yaml")
    assert "nodeSelector" not in proxy  # a command role asks for no GPU, so for no GPU node
    assert "resources" not in proxy["containers"][0]  # type: ignore[index]


def test_a_rocm_gpu_asks_for_amd_gpus_on_nodes_amds_labeller_marks(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo(
        {"app.toml": ONE, "mi300x.toml": SITE.format(gpu="MI300X"), "mi250x.toml": SITE.format(gpu="MI250X")}
    )
    _render(run, repo, "app+mi300x", tmp_path / "a", "k8s")
    _validate_all(tmp_path / "a")
    spec = _pod_spec(tmp_path / "a", "serve.k8s.yaml")
    assert spec["nodeSelector"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}
    assert spec["containers"][0]["resources"] == {"limits": {"amd.com/gpu": 2}}  # type: ignore[index]
    # the label AMD's labeller writes for an MI250X is not known: no selector, and the manifest says what to set
    _render(run, repo, "app+mi250x", tmp_path / "b", "k8s")
    spec = _pod_spec(tmp_path / "b", "serve.k8s.yaml")
    assert "nodeSelector" not in spec
    assert spec["containers"][0]["resources"] == {"limits": {"amd.com/gpu": 2}}  # type: ignore[index]
    assert (
        "# 2 x MI250X (amd.com/gpu); node selector none: the amd.com/gpu.product-name label AMD's node labeller "
        "sets for MI250X is not known to profilekit; set [render.k8s.node_selectors.MI250X] in profilekit.toml\n"
    ) in (tmp_path / "b" / "serve.k8s.yaml").read_text(encoding="utf-8")


def test_without_a_declared_gpu_the_pod_takes_any_nvidia_gpu_and_says_so(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    _render(run, make_repo({"app.toml": ONE}), "app", tmp_path, "k8s")
    spec = _pod_spec(tmp_path, "serve.k8s.yaml")
    assert "nodeSelector" not in spec
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}  # type: ignore[index]
    assert "# 2 nvidia.com/gpu on any node: no GPU declared ([hardware] gpu), so no node selector\n" in (
        tmp_path / "serve.k8s.yaml"
    ).read_text(encoding="utf-8")


def test_profilekit_toml_replaces_the_node_selector_or_drops_it(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    layers = {"app.toml": ONE, "h100.toml": SITE.format(gpu="H100-SXM-80GB"), "l4.toml": SITE.format(gpu="L4")}
    config = (
        '[vllm]\nversion = "0.33.0"\n\n'
        '[render.k8s.node_selectors.H100-SXM-80GB]\n"cloud.google.com/gke-accelerator" = "nvidia-h100-80gb"\n\n'
        "[render.k8s.node_selectors.L4]\n"
    )
    repo = make_repo(layers, config=config)
    _render(run, repo, "app+h100", tmp_path / "a", "k8s")
    _validate_all(tmp_path / "a")
    assert _pod_spec(tmp_path / "a", "serve.k8s.yaml")["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"
    }
    _render(run, repo, "app+l4", tmp_path / "b", "k8s")
    assert "nodeSelector" not in _pod_spec(tmp_path / "b", "serve.k8s.yaml")
    assert "node selector none: [render.k8s.node_selectors.L4] in profilekit.toml is empty" in (
        tmp_path / "b" / "serve.k8s.yaml"
    ).read_text(encoding="utf-8")


def test_a_gpu_in_the_target_tables_that_names_no_gpu_is_named_with_the_closest(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    config = (
        '[vllm]\nversion = "0.33.0"\n\n[render.k8s.node_selectors.H100-SXM]\n"a.example/gpu" = "h100"\n\n'
        '[render.slurm.gres_types]\nB200-SXM = "b200"\n'
    )
    repo = make_repo({"app.toml": ONE}, config=config)
    err = _render(run, repo, "app", tmp_path / "a", "k8s")
    assert (
        "note: profilekit.toml: [render.k8s.node_selectors] H100-SXM names no GPU of the catalogue or of [gpus]; "
        "did you mean H100-SXM-80GB?"
    ) in err
    err = _render(run, repo, "app", tmp_path / "b", "slurm")
    assert (
        "note: profilekit.toml: [render.slurm.gres_types] B200-SXM names no GPU of the catalogue or of [gpus]; "
        "did you mean B200 or GB200?"
    ) in err


def test_a_label_kubernetes_refuses_is_a_config_error_at_its_line(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    config = '[vllm]\nversion = "0.33.0"\n\n[render.k8s.node_selectors.L4]\n"gpu" = "NVIDIA L4"\n'
    repo = make_repo({"app.toml": ONE}, config=config)
    result = run("--repo", repo, "render", "app", "--out", tmp_path / "out", "--target", "k8s")
    assert result.code != 0
    assert result.err == (
        "profilekit.toml:5:1: error invalid-config render.k8s.node_selectors.L4.gpu: 'NVIDIA L4' is not a Kubernetes "
        "label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit\n"
        "1 error, 0 warnings\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_example_h100_job_asks_slurm_for_h100s_by_type(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated+site/h100", tmp_path, "slurm")
    job = tmp_path / "job.sbatch"
    _static_checks(job)
    text = job.read_text(encoding="utf-8")
    assert "#SBATCH --gres=gpu:nvidia_h100_80gb_hbm3:1\n" in text
    assert "# `sbatch --nodes=1 --gres=gpu:nvidia_h100_80gb_hbm3:2 job.sbatch` runs every role on one node" in text
    assert text.count("--gres=gpu:nvidia_h100_80gb_hbm3:1 --job-name=") == 2
    assert "#   1 x H100-SXM-80GB: GRES type nvidia_h100_80gb_hbm3 (as SLURM's AutoDetect names it)\n" in text
    assert "--gres=none --job-name=proxy" in text


def test_gres_types_of_profilekit_toml_name_the_sites_own_types(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    layers = {"app.toml": ONE, "h100.toml": SITE.format(gpu="H100-SXM-80GB"), "l4.toml": SITE.format(gpu="L4")}
    config = '[vllm]\nversion = "0.33.0"\n\n[render.slurm.gres_types]\nH100-SXM-80GB = "h100"\nL4 = ""\n'
    repo = make_repo(layers, config=config)
    _render(run, repo, "app+h100", tmp_path / "a", "slurm")
    text = (tmp_path / "a" / "job.sbatch").read_text(encoding="utf-8")
    assert "#SBATCH --gres=gpu:h100:2\n" in text
    assert "#   2 x H100-SXM-80GB: GRES type h100 ([render.slurm.gres_types])\n" in text
    _render(run, repo, "app+l4", tmp_path / "b", "slurm")
    text = (tmp_path / "b" / "job.sbatch").read_text(encoding="utf-8")
    assert "#SBATCH --gres=gpu:2\n" in text
    assert "#   2 x L4: GPUs of any type ([render.slurm.gres_types])\n" in text


def test_roles_on_different_gpus_get_gpus_of_any_type_and_the_job_says_why(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    layers = {
        "pd.toml": """
            [serve]
            model = "Qwen/Qwen3-0.6B"
            [roles.prefill]
            kind = "vllm"
            [roles.prefill.serve]
            port = 8100
            [roles.prefill.hardware]
            gpu = "H100-SXM-80GB"
            [roles.decode]
            kind = "vllm"
            [roles.decode.serve]
            port = 8200
            [roles.decode.hardware]
            gpu = "L40S"
        """
    }
    _render(run, make_repo(layers), "pd", tmp_path, "slurm")
    text = (tmp_path / "job.sbatch").read_text(encoding="utf-8")
    assert "#SBATCH --gres=gpu:1\n" in text
    assert (
        "#   declares L40S (GRES type nvidia_l40s), but one job asks every node for the same GPUs: it asks for GPUs "
        "of any type (render the roles of each GPU as a stack of their own)\n"
    ) in text
