"""The `VLLM_*` names profilekit ships are vLLM's own, and `unknown-env-var` gives vLLM's verdict.

The lists (src/profilekit/vllm/catalogues/envs-X.json, tools/gen_envs.py) are read from `vllm/envs.py` by
`ast`; here the release's own interpreter imports `vllm.envs` and the keys must be the same. vLLM's
`validate_environ` warns about an unknown `VLLM_*` variable and refuses it with
`--fail-on-environ-validation`: the oracle must agree with profilekit's verdict both ways.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from profilekit.vllm.envs import known_env_names
from tests.conftest import MakeRepo
from tests.oracle import models
from tests.oracle.oracle_client import OracleWorker

pytestmark = pytest.mark.oracle


def test_shipped_names_are_the_keys_of_vllms_environment_variables(oracle: OracleWorker, oracle_version: str) -> None:
    env = oracle.env
    script = "import json, vllm.envs as e; print(json.dumps(list(e.environment_variables)))"
    result = subprocess.run(
        [str(env.python), "-c", script],
        env=env.worker_environ(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    runtime = json.loads(result.stdout.strip().splitlines()[-1])
    assert frozenset(runtime) == known_env_names(oracle_version)


CASES = {
    "unknown-refused": (["--fail-on-environ-validation"], "VLLM_LOGING_LEVEL", True),
    "known-accepted": (["--fail-on-environ-validation"], "VLLM_LOGGING_LEVEL", False),
    "unknown-warned": ([], "VLLM_LOGING_LEVEL", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_profilekit_gives_vllms_verdict_on_unknown_variables(
    oracle: OracleWorker, oracle_version: str, make_repo: MakeRepo, case: str
) -> None:
    flags, name, refused = CASES[case]
    answer = oracle.validate(["dummy", *flags], env={name: "DEBUG"}, config_json=models.llama())
    said = f"Unknown vLLM environment variable detected: {name}"
    if refused:
        assert answer["ok"] is False and answer["error"] == said, answer
    else:
        assert answer == {"ok": True}
    strict = "fail_on_environ_validation = true\n" if flags else ""
    layer = (
        f'[model]\narchitecture = "LlamaForCausalLM"\n\n[serve]\nmodel = "dummy"\n{strict}\n[env]\n{name} = "DEBUG"\n'
    )
    root: Path = make_repo({"s.toml": layer}, config=f'[vllm]\nversion = "{oracle_version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    verdict = vllm_verdict(session.stack("s"), "serve", version=oracle_version, catalogue=session.catalogue, root=root)
    assert verdict.accepted is not refused
    if refused:
        assert verdict.rule == "unknown-env-var"
        assert verdict.message is not None and said in verdict.message
