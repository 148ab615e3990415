"""`render --target vllm-config`: `vllm serve MODEL --config R.yaml` parses, in vLLM's real parser, like the argv.

For every example stack and role of this repository's `profiles/` and the seeded corpus of layer compositions
the render round trip uses (tools/corpus.py), the rendered YAML file, read by the real `vllm` CLI parser (its
`--config` expansion with PyYAML included), must give the composed value of every option, leave every other
option at its default, and give the namespace of the rendered command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from oracle_report import LAYER_CORPUS, Baselines, render_corpus, render_profiles

pytestmark = pytest.mark.oracle


def _readable(disagreements: list[dict[str, str]]) -> str:
    return "\n".join(f"{d['case']}: {d['reason']}" for d in disagreements)


def test_every_example_stack_parses_from_its_config_file_as_from_its_argv(
    oracle: OracleWorker, oracle_version: str, tmp_path: Path
) -> None:
    outcome = render_profiles(oracle_version, oracle, via_config=tmp_path)
    assert outcome.disagreements == [], _readable(outcome.disagreements)
    # nemotron-replayssm, qwen-offload, qwen-disaggregated (prefill, decode), models/*, the [lint] stacks
    assert outcome.cases >= 8
    # the one role that spans nodes: the vllm-config target refuses it (multinode-unrenderable; tests/test_multinode.py)
    assert [item["case"] for item in outcome.skipped] == ["profiles: deepseek-two-nodes [decode]"]


def test_a_corpus_of_compositions_parses_from_config_files_as_from_argv(
    oracle: OracleWorker, oracle_version: str
) -> None:
    outcome = render_corpus(oracle_version, oracle, baselines=Baselines(oracle), via_config=True)
    assert outcome.disagreements == [], _readable(outcome.disagreements[:20])
    assert outcome.cases >= LAYER_CORPUS


def _parse_config(oracle: OracleWorker, tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    answer = oracle.parse(["m", "--config", str(path)])
    assert answer.get("ok"), answer
    namespace: dict[str, object] = answer["namespace"]
    return namespace


def test_false_in_a_config_file_changes_nothing_so_the_negative_option_is_written(
    oracle: OracleWorker, tmp_path: Path
) -> None:
    # vLLM 0.28+ turns `x: false` into `--no-x` only when the parser that expands the file knows that option;
    # through the `vllm` command that is the top-level parser, so the value is dropped in every release
    bare = oracle.parse(["m"])["namespace"]
    dropped = _parse_config(oracle, tmp_path, "enable-prefix-caching: false\nenforce-eager: false\n")
    assert dropped["enable_prefix_caching"] == bare["enable_prefix_caching"] is None
    negative = _parse_config(oracle, tmp_path, "no-enable-prefix-caching: true\n")
    assert negative["enable_prefix_caching"] is False


def test_a_value_glued_to_its_option_is_one_key(oracle: OracleWorker, tmp_path: Path) -> None:
    # a value starting with '-' is glued to its option on the command line (`--max-model-len=-1`); as a separate
    # word after `--max-model-len` it could be read as an option, so the config file holds the glued word as a key
    namespace = _parse_config(oracle, tmp_path, "max-model-len=-1: true\n")
    assert namespace["max_model_len"] == -1
