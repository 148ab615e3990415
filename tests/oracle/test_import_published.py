"""The published-launch corpus (tests/data/launches/published: 49 real launches from public repositories, each with
its source) through `import`, with vLLM's parser the referee (tools/import_corpus.py says how each original is
found without profilekit's reading: real bash with stub launchers, the kubelet's expansion, `docker-compose
config`).

Every case agrees (the same namespace from the original and from the rendered argv of each imported role, or both
refused), except the refusals import makes by design, each listed here: a launch whose words need the running
shell (`$HOME`, `$USER`, `$1`, a variable only the launching environment sets) and one that holds a credential.
`PROFILEKIT_IMPORT_RESULTS=write` rewrites tests/oracle/results/import-published-<release>.json.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from import_corpus import RESULTS, judge

# import's refusals by design (issue 29, item 4: run-time values stay refused; credentials stay out of layers)
BY_DESIGN = {
    "compose/05-tongyi-command-from-env-var.compose.yaml",  # command: ${VLLM_ARGS}, set by the launching shell
    "sbatch/07-olcf-frontier-srun-apptainer-unset.sbatch",  # $USER in a path, $MODEL from sbatch's environment
    "sbatch/08-delphea-apptainer-bash-lc-api-server.sbatch",  # $HOME in the launch's paths
    "launchers/06-ccl-bench-nsys-mixtral-ep-tee.sh",  # $MODEL, $PORT, ... from the script's positional parameters
    "launchers/08-hyak-apptainer-exec-bg.sh",  # $USER, $HF_HOME
    "launchers/10-password-locking-cuda-visible-devices-python-m.sh",  # $HOME
    "pd/01-prodstack-lmcache-nixl-docker/",  # the router's port is the script's $1
    "pd/04-cpumemconnector-shared-cpu/",  # $PWD (0.33.0 refuses its connector config anyway: both refuse there)
    "launchers/02-llm-serve-exec-python-m.sh",  # --api-key: a credential
}


def test_the_published_corpus_imports_as_vllm_reads_it(oracle: OracleWorker, oracle_version: str) -> None:
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is not installed: .ci/run installs it (apt-get install docker-compose)")
        pytest.skip("docker-compose (the compose cases' referee) is not installed: apt-get install docker-compose")
    result = judge(oracle_version, oracle)
    if os.environ.get("PROFILEKIT_IMPORT_RESULTS") == "write":
        path = RESULTS / f"import-published-{oracle_version}.json"
        path.write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")
    assert result.disagreements == []
    refused = {item["case"] for item in [*result.run_time, *result.credential]}
    assert refused <= BY_DESIGN, refused - BY_DESIGN
    assert result.cases == 49
    assert result.agreements == result.cases - len(refused)
