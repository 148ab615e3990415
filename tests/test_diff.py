"""`profilekit diff`: two stacks key by key (golden text and JSON on the example stacks), usage errors, and the
upgrade impact of one stack across two vLLM releases (`diff --to-release`, `lint --to-release`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run

GOLDEN = Path(__file__).resolve().parent / "golden"
SITES = ("nemotron-replayssm+site/h100", "nemotron-replayssm+site/gb200")


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PROFILEKIT_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


# ---- two stacks ---------------------------------------------------------------------------------


def test_moving_from_h100_to_gb200_text(run: Run) -> None:
    """The site question: every changed key with both values and origins, the argv and env lines; exit 1."""
    result = run("diff", *SITES, cwd=REPO_ROOT)
    assert (result.code, result.err) == (1, ""), result
    _golden("diff-site-h100-gb200.txt", result.out)


def test_moving_from_h100_to_gb200_json(run: Run) -> None:
    result = run("diff", *SITES, "--format", "json", cwd=REPO_ROOT)
    assert (result.code, result.err) == (1, ""), result
    _golden("diff-site-h100-gb200.json", result.out)
    data = json.loads(result.out)
    assert [k["key"] for k in data["roles"][0]["keys"]] == [
        "serve.gpu_memory_utilization",
        "env.CUDA_DEVICE_ORDER",
        "env.NCCL_CUMEM_ENABLE",
        "env.NCCL_MNNVL_ENABLE",
        "hardware.gpu",
        "hardware.gpus_per_node",
    ]


def test_equal_stacks_exit_0(run: Run) -> None:
    result = run("diff", "qwen-offload", "qwen-offload", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out == "--- a: qwen-offload\n+++ b: qwen-offload\nno differences (vLLM 0.33.0)\n"


def test_a_role_on_one_side_only(run: Run) -> None:
    result = run("diff", "qwen-disaggregated", "qwen-offload", "--role", "proxy", cwd=REPO_ROOT)
    assert result.code == 1, result
    assert result.out == (
        "--- a: qwen-disaggregated\n"
        "+++ b: qwen-offload\n"
        "[proxy] only in a (qwen-disaggregated)\n"
        '  - command = ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation", "--prefill", '
        '"http://127.0.0.1:8100", "--decode", "http://127.0.0.1:8200", "--host", "127.0.0.1", "--port", "8192"]\n'
        "      a: profiles/disaggregated.toml:36:1  (roles.proxy.command, layer disaggregated)\n"
        "  command line:\n"
        "    - vllm-router\n"
        "    - --policy round_robin\n"
        "    - --vllm-pd-disaggregation\n"
        "    - --prefill http://127.0.0.1:8100\n"
        "    - --decode http://127.0.0.1:8200\n"
        "    - --host 127.0.0.1\n"
        "    - --port 8192\n"
        "1 role differs: 0 changed, 0 added, 1 removed keys (vLLM 0.33.0)\n"
    )


def test_secrets_are_references_and_unset_shows_where(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "a.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\nmax_num_seqs = 8\n',
            "b.toml": '[layer]\nextends = ["a"]\nunset = ["serve.max_num_seqs"]\n\n[env]\nHF_TOKEN = { secret = true }\n',
        }
    )
    result = run("--repo", root, "diff", "a", "b")
    assert result.code == 1, result
    assert result.out == (
        "--- a: a\n"
        "+++ b: b\n"
        "[serve]\n"
        "  - serve.max_num_seqs = 8\n"
        "      a: profiles/a.toml:3:1  (serve.max_num_seqs, layer a)\n"
        "      b: unset at profiles/b.toml:3:10  (layer.unset[0], layer b)\n"
        "  + env.HF_TOKEN = { secret = true }\n"
        "      b: profiles/b.toml:6:14  (env.HF_TOKEN.secret, layer b)\n"
        "  command line:\n"
        "    - --max-num-seqs 8\n"
        "  env:\n"
        "    + HF_TOKEN=<secret: from the launching environment>\n"
        "1 role differs: 0 changed, 1 added, 1 removed keys (vLLM 0.33.0)\n"
    )
    data = json.loads(run("--repo", root, "diff", "a", "b", "--format", "json").out)
    assert data["roles"][0]["env"] == [{"op": "+", "name": "HF_TOKEN", "secret": True}]
    assert data["roles"][0]["keys"][0]["b"] == {
        "value": None,
        "unset": True,
        "origin": {"file": "profiles/b.toml", "line": 3, "column": 10, "key": "layer.unset[0]", "layer": "b"},
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("qwen-offlod", "qwen-offload"),
            "profilekit: error: unknown layer 'qwen-offlod' in stack 'qwen-offlod'\n"
            "  hint: did you mean 'qwen-offload'?\n",
        ),
        (
            ("qwen-offload", "qwen-disaggregated", "--role", "prefil"),
            "profilekit: error: no role 'prefil' in 'qwen-offload' and 'qwen-disaggregated'\n"
            "  hint: did you mean 'prefill'?\n",
        ),
        (
            ("qwen-offload",),
            "profilekit: error: diff takes two stacks, or one stack with --to-release\n"
            "  hint: profilekit diff STACK_A STACK_B, or profilekit diff STACK --from-release X --to-release Y\n",
        ),
        (
            ("qwen-offload", "--from-release", "0.30.0"),
            "profilekit: error: --from-release needs --to-release\n"
            "  hint: e.g. --from-release 0.30.0 --to-release 0.33.0\n",
        ),
        (
            ("qwen-offload", "--to-release", "0.34.0"),
            "profilekit: error: unsupported vLLM version '0.34.0' (from --vllm-version)\n"
            "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0\n",
        ),
        (
            ("qwen-offload", "qwen-offload", "--format", "yaml"),
            "profilekit: error: unknown format 'yaml'\n  hint: choose one of: text, json\n",
        ),
    ],
)
def test_usage_errors_exit_2(run: Run, args: tuple[str, ...], message: str) -> None:
    result = run("diff", *args, cwd=REPO_ROOT)
    assert (result.code, result.out, result.err) == (2, "", message), result


# ---- upgrade impact -----------------------------------------------------------------------------


def test_upgrade_from_0_27_turns_prefix_caching_on_for_the_hybrid_model(run: Run) -> None:
    """The example stack: prefix caching on by default from 0.28.0, and the Mamba cache mode that follows."""
    result = run("diff", "nemotron-replayssm", "--from-release", "0.27.0", "--to-release", "0.33.0", cwd=REPO_ROOT)
    assert (result.code, result.err) == (1, ""), result
    _golden("upgrade-nemotron-replayssm-0.27.0-0.33.0.txt", result.out)


HYBRID = """
[model]
architecture = "NemotronHForCausalLM"

[serve]
model = "nvidia/Nemotron-H-8B-Base-8K"
mamba_cache_mode = "all"
enable_mamba_fine_grained_prefix_cache = true
disable_cascade_attn = true

[env]
VLLM_KIMI_K3_GEMM_RS = "1"
"""


@pytest.fixture
def old_repo(make_repo: MakeRepo) -> Path:
    return make_repo({"hybrid.toml": HYBRID}, config='[vllm]\nversion = "0.30.0"\n')


def test_upgrade_lists_options_defaults_and_findings(old_repo: Path, run: Run) -> None:
    result = run("--repo", old_repo, "diff", "hybrid", "--to-release", "0.33.0")
    assert (result.code, result.err) == (1, ""), result
    _golden("upgrade-hybrid-0.30.0-0.33.0.txt", result.out)


def test_upgrade_json(old_repo: Path, run: Run) -> None:
    result = run("--repo", old_repo, "diff", "hybrid", "--to-release", "0.33.0", "--format", "json")
    assert result.code == 1, result
    _golden("upgrade-hybrid-0.30.0-0.33.0.json", result.out)
    data = json.loads(result.out)
    assert {(i["kind"], i["key"]) for i in data["roles"][0]["options"]} == {
        ("option-parses-differently", "serve.mamba_cache_mode"),
        ("option-deprecated", "serve.mamba_cache_mode"),
        ("option-removed", "serve.enable_mamba_fine_grained_prefix_cache"),
        ("option-deprecated", "serve.disable_cascade_attn"),
        ("env-removed", "env.VLLM_KIMI_K3_GEMM_RS"),
    }
    assert [(f["change"], f["rule"]) for f in data["findings"]] == [
        ("appears", "deprecated-option"),
        ("appears", "invalid-value"),
        ("appears", "unknown-option"),
        ("appears", "deprecated-option"),
    ]


def test_no_upgrade_impact_exits_0(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"q.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'})
    result = run("--repo", root, "diff", "q", "--from-release", "0.30.0", "--to-release", "0.31.0")
    assert result.code == 0, result
    assert result.out == "q: vLLM 0.30.0 -> 0.31.0\nno impact\n"


def test_upgrade_downwards_shows_findings_that_disappear(old_repo: Path, run: Run) -> None:
    result = run("--repo", old_repo, "--vllm-version", "0.33.0", "diff", "hybrid", "--to-release", "0.30.0")
    assert result.code == 1, result
    assert "    - profiles/hybrid.toml:7:1: error unknown-option serve.enable_mamba_fine_grained_prefix_cache: " in (
        result.out
    )
    assert result.out.endswith("0 new findings, 5 findings gone, 0 command lines changed\n")


def test_lint_to_release_on_the_whole_repository(old_repo: Path, run: Run) -> None:
    """Exit 1: the new release gives errors the current one does not."""
    result = run("--repo", old_repo, "lint", "--to-release", "0.33.0")
    assert (result.code, result.err) == (1, ""), result
    _golden("lint-upgrade-0.30.0-0.33.0.txt", result.out)
    data = json.loads(run("--repo", old_repo, "lint", "--to-release", "0.33.0", "--format", "json").out)
    assert data["stacks"] == ["hybrid"]
    assert data["impacts"][0]["reached"] == [{"stack": "hybrid", "role": "serve"}]


def test_lint_to_release_of_the_examples_changes_defaults_only(run: Run) -> None:
    result = run("--vllm-version", "0.30.0", "lint", "--to-release", "0.33.0", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out.endswith(
        "3 option and default changes, 0 new findings (0 errors), 0 findings gone, 0 command lines changed\n"
    )


def test_lint_to_release_takes_text_and_json_only(run: Run) -> None:
    result = run("lint", "--to-release", "0.33.0", "--format", "sarif", cwd=REPO_ROOT)
    assert (result.code, result.err) == (
        2,
        "profilekit: error: unknown format 'sarif'\n  hint: choose one of: text, json\n",
    )
