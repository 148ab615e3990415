"""The Proton profiler beside CUDA graphs (rules/proton.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

PROTON = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton"}
MSG_EARLY = (
    "The Proton profiler requires CUDA graphs to be disabled. Use --enforce-eager or set "
    "--compilation-config.cudagraph_mode=none."
)
MSG_PC_SAMPLING = "Proton PC sampling requires CUDA graphs to be disabled. Use --enforce-eager."
MSG_ATTRIBUTION = (
    "Proton profiling with CUDA graphs requires proton_graph_attribution=True to capture replayed kernels. "
    "Enable attribution or use --enforce-eager."
)


def proton(profiler: dict[str, Any] | None = None, **serve: Any) -> dict[str, str]:
    return files(profiler_config={**PROTON, **(profiler or {})}, **serve)


@pytest.mark.parametrize("version", RELEASES)
def test_proton_with_default_cuda_graphs(check: Check, version: str) -> None:
    found = check(proton(), version=version)
    if version < "0.28.0":
        assert check(proton(), version=version, rule="proton-cuda-graphs") == []
        return
    if version < "0.30.0":
        what = 'profiler_config.profiler = "proton" with CUDA graphs on (no enforce_eager, cudagraph_mode unset)'
        assert messages(found) == [refuses(version, what, MSG_EARLY)]
    else:
        what = (
            'profiler_config.profiler = "proton" with CUDA graphs on (vLLM\'s default) without '
            "profiler_config.proton_graph_attribution"
        )
        assert messages(found) == [refuses(version, what, MSG_ATTRIBUTION)]
    assert found[0].rule == "proton-cuda-graphs"
    assert check(proton(enforce_eager=True), version=version) == []
    assert check(proton(compilation_config={"cudagraph_mode": "NONE"}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_proton_graph_attribution_only_helps_from_030(check: Check, version: str) -> None:
    attributed = proton({"proton_graph_attribution": True}, compilation_config={"cudagraph_mode": "FULL"})
    found = check(attributed, version=version, rule="proton-cuda-graphs")
    if version < "0.28.0" or version >= "0.30.0":
        assert found == []
        return
    what = 'profiler_config.profiler = "proton" with compilation_config.cudagraph_mode = "FULL"'
    assert messages(found) == [refuses(version, what, MSG_EARLY)]


@pytest.mark.parametrize("version", [v for v in RELEASES if v >= "0.30.0"])
def test_proton_pc_sampling_needs_cuda_graphs_off(check: Check, version: str) -> None:
    sampling = proton({"proton_mode": "pcsampling", "proton_graph_attribution": True})
    found = check(sampling, version=version, rule="proton-cuda-graphs")
    what = 'profiler_config.profiler = "proton" with CUDA graphs on (vLLM\'s default) with profiler_config.proton_mode'
    assert messages(found) == [refuses(version, f'{what} = "pcsampling"', MSG_PC_SAMPLING)]
    assert check(proton({"proton_mode": "pcsampling"}, enforce_eager=True), version=version) == []
    # a compilation mode the options leave to vLLM may turn CUDA graphs off: profilekit does not guess
    undecided = proton({"proton_mode": "pcsampling"}, compilation_config={"mode": "NONE"})
    assert check(undecided, version=version, rule="proton-cuda-graphs") == []
    encoder = proton(
        {"proton_mode": "pcsampling"}, compilation_config={"cudagraph_mode": "NONE", "cudagraph_mm_encoder": True}
    )
    assert messages(check(encoder, version=version, rule="proton-cuda-graphs")) == [
        refuses(
            version,
            'profiler_config.profiler = "proton" with compilation_config.cudagraph_mm_encoder = true with '
            'profiler_config.proton_mode = "pcsampling"',
            MSG_PC_SAMPLING,
        )
    ]
