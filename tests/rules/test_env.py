"""Rules about a role's environment (rules/env.py): `unknown-env-var` per release, and `env-unrepresentable`."""

from __future__ import annotations

import pytest

from profilekit.errors import Severity
from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo, Run
from tests.rules.conftest import Check, messages
from tests.rules.layers import LLAMA, RELEASES, layer


def _said(name: str) -> str:
    return f'"Unknown vLLM environment variable detected: {name}"'


@pytest.mark.parametrize("version", RELEASES)
def test_a_misspelt_vllm_variable_is_a_warning_with_did_you_mean(check: Check, version: str) -> None:
    found = check({"s.toml": layer(LLAMA, env={"VLLM_LOGING_LEVEL": "DEBUG"})}, version=version)
    assert [(f.rule, f.severity, f.role, f.fix) for f in found] == [
        ("unknown-env-var", Severity.WARNING, "serve", "did you mean 'VLLM_LOGGING_LEVEL'?")
    ]
    assert messages(found) == [
        f"env.VLLM_LOGING_LEVEL: vLLM {version} has no environment variable VLLM_LOGING_LEVEL; it starts anyway "
        f"and logs {_said('VLLM_LOGING_LEVEL')}"
    ]
    assert (found[0].locations[0].key, found[0].locations[0].line) == ("env.VLLM_LOGING_LEVEL", 8)


@pytest.mark.parametrize("version", RELEASES)
def test_known_and_non_vllm_variables_pass(check: Check, version: str) -> None:
    env = {"VLLM_LOGGING_LEVEL": "DEBUG", "VLLM_USE_V2_MODEL_RUNNER": "0", "UCX_TLS": "rc", "HF_HUB_OFFLINE": "1"}
    assert check({"s.toml": layer(LLAMA, env=env)}, version=version) == []


@pytest.mark.parametrize(
    ("name", "version", "expected"),
    [
        # renamed by vLLM 0.31.0 (tools/gen_envs.py RENAMES)
        ("VLLM_KIMI_K3_GEMM_RS", "0.30.0", None),
        (
            "VLLM_KIMI_K3_GEMM_RS",
            "0.31.0",
            ("(vLLM 0.31.0 renamed it VLLM_ENABLE_GEMM_RS)", "write VLLM_ENABLE_GEMM_RS instead"),
        ),
        ("VLLM_ENABLE_GEMM_RS", "0.31.0", None),
        (
            "VLLM_ENABLE_GEMM_RS",
            "0.30.0",
            (
                "(it is new in vLLM 0.31.0; earlier releases read VLLM_KIMI_K3_GEMM_RS)",
                "write VLLM_KIMI_K3_GEMM_RS for vLLM 0.30.0",
            ),
        ),
        (
            "VLLM_ROCM_USE_AITER_MOE_SITUV2_A8W4",
            "0.33.0",
            (
                "(vLLM 0.31.0 renamed it VLLM_ROCM_USE_AITER_MOE_SITUV2)",
                'write VLLM_ROCM_USE_AITER_MOE_SITUV2 = "a8w4" instead',
            ),
        ),
        # replaced by a `vllm serve` option in 0.30.0
        ("VLLM_MM_HASHER_ALGORITHM", "0.29.0", None),
        (
            "VLLM_MM_HASHER_ALGORITHM",
            "0.30.0",
            ("(vLLM 0.30.0 replaced it by the option mm_hasher_algorithm)", "set serve.mm_hasher_algorithm instead"),
        ),
        # removed in 0.32.0
        ("VLLM_ENGINE_ITERATION_TIMEOUT_S", "0.31.0", None),
        (
            "VLLM_ENGINE_ITERATION_TIMEOUT_S",
            "0.32.0",
            ("(vLLM 0.27.0–0.31.0 read it)", "remove it, or target a release that reads it"),
        ),
    ],
)
def test_variables_other_releases_know(check: Check, name: str, version: str, expected: tuple[str, str] | None) -> None:
    found = check({"s.toml": layer(LLAMA, env={name: "1"})}, version=version)
    if expected is None:
        assert found == []
        return
    history, fix = expected
    assert [(f.rule, f.message, f.fix) for f in found] == [
        (
            "unknown-env-var",
            f"env.{name}: vLLM {version} has no environment variable {name} {history}; it starts anyway and logs "
            f"{_said(name)}",
            fix,
        )
    ]


def test_fail_on_environ_validation_makes_it_an_error_vllm_reports(make_repo: MakeRepo) -> None:
    root = make_repo(
        {"s.toml": layer(LLAMA, env={"VLLM_LOGING_LEVEL": "DEBUG"}, fail_on_environ_validation=True)},
    )
    session = Session.open(repo=root, vllm_version=None)
    stack = session.stack("s")
    (finding,) = session.check(stack)
    assert (finding.rule, finding.severity, finding.role) == ("unknown-env-var", Severity.ERROR, "serve")
    assert finding.message == (
        "env.VLLM_LOGING_LEVEL: vLLM 0.33.0 has no environment variable VLLM_LOGING_LEVEL; with "
        f"fail_on_environ_validation it refuses to start: {_said('VLLM_LOGING_LEVEL')}"
    )
    assert [loc.key for loc in finding.locations] == ["env.VLLM_LOGING_LEVEL", "serve.fail_on_environ_validation"]
    verdict = vllm_verdict(stack, "serve", version="0.33.0", catalogue=session.catalogue, root=root)
    assert (verdict.accepted, verdict.rule) == (False, "unknown-env-var")


def test_without_fail_on_environ_validation_vllm_accepts(make_repo: MakeRepo) -> None:
    root = make_repo({"s.toml": layer(LLAMA, env={"VLLM_LOGING_LEVEL": "DEBUG"})})
    session = Session.open(repo=root, vllm_version=None)
    stack = session.stack("s")
    verdict = vllm_verdict(stack, "serve", version="0.33.0", catalogue=session.catalogue, root=root)
    assert verdict.accepted


def test_one_warning_per_place_written_and_command_roles_are_not_vllm(check: Check) -> None:
    pd = layer(LLAMA, env={"VLLM_LOGING_LEVEL": "DEBUG"})
    pd += (
        "\n[roles.prefill.serve]\nport = 8100\n\n[roles.decode.serve]\nport = 8200\n"
        '\n[roles.proxy]\nkind = "command"\ncommand = ["vllm-router"]\n\n[roles.proxy.env]\nVLLM_ROUTER_X = "1"\n\n[roles.decode]\nkind = "vllm"\n\n[roles.prefill]\nkind = "vllm"\n'
    )
    found = check({"s.toml": pd})
    assert [(f.rule, f.role, f.locations[0].key) for f in found] == [("unknown-env-var", None, "env.VLLM_LOGING_LEVEL")]


def test_check_prints_the_issue_row_and_lint_strict_fails(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"s.toml": layer(LLAMA, env={"VLLM_LOGING_LEVEL": "DEBUG"})})
    result = run("check", "s", cwd=root)
    assert result.code == 0, result
    assert result.out == (
        "profiles/s.toml:8:1: warning unknown-env-var env.VLLM_LOGING_LEVEL: vLLM 0.33.0 has no environment "
        "variable VLLM_LOGING_LEVEL; it starts anyway and logs "
        f"{_said('VLLM_LOGING_LEVEL')}\n"
        "    in stack s, role serve\n"
        "    fix: did you mean 'VLLM_LOGGING_LEVEL'?\n"
        "0 errors, 1 warning\n"
    )
    assert run("check", "--strict", "s", cwd=root).code == 1
    linted = run("lint", "--strict", cwd=root)
    assert linted.code == 1, linted
    assert "warning unknown-env-var env.VLLM_LOGING_LEVEL" in linted.out


def test_env_unrepresentable_is_a_rule_of_the_engine(check: Check) -> None:
    found = check({"s.toml": layer(LLAMA, env={"A": "it's $HOME"})})
    assert [(f.rule, f.severity, f.role) for f in found] == [("env-unrepresentable", Severity.ERROR, "serve")]
    assert check({"s.toml": layer(LLAMA, env={"A": "plain $HOME"})}) == []
