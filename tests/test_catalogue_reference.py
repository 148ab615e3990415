"""Our generated 0.33.0 flag catalogue against an independent dump of the same parser.

``src/profilekit/vllm/catalogues/vllm-0.33.0.json`` comes from
``tools/gen_catalogue.py``; ``tests/data/reference/vllm-0.33.0-flags.json`` was
dumped separately from the same release's parser (copied into the repository
from the project's shared reference folder; see the README beside it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
OURS = REPO_ROOT / "src" / "profilekit" / "vllm" / "catalogues" / "vllm-0.33.0.json"
REFERENCE = REPO_ROOT / "tests" / "data" / "reference" / "vllm-0.33.0-flags.json"

# Compared exactly, entry by entry.
EXACT_FIELDS = (
    "flag",
    "dest",
    "type",
    "choices",
    "default",
    "option_strings",
    "accepted_option_strings",
    "action",
    "nargs",
    "default_kind",
    "group",
    "deprecated",
    "positional",
    "enum_after_parse",
)
# Whitelisted, compared loosely:
# - help_first_line: prose, not behaviour. The reference keeps the trailing
#   space some of vLLM's implicitly joined help strings end their first line
#   with; whitespace is compared collapsed so a re-wrap of vLLM's help does not
#   count as a difference, while a different sentence still does.
# Not compared at all: the order of keys inside an entry (our files sort them,
# the reference does not) and the JSON layout; entries are compared as parsed
# objects, keyed by dest, plus the parser order of the dests.
LOOSE_FIELDS = ("help_first_line",)
# Ours only: the whole help text, which `profilekit flags` prints (the reference dump keeps the first line).
EXTRA_FIELDS = ("help",)


def load(path: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def catalogues() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return load(OURS), load(REFERENCE)


def by_dest(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["dest"]: entry for entry in entries}


def test_every_entry_has_exactly_the_reference_fields(
    catalogues: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ours, reference = catalogues
    for mine, theirs in zip(ours, reference, strict=True):
        assert set(mine) - set(EXTRA_FIELDS) == set(theirs), mine["dest"]
        assert set(mine) <= set(EXACT_FIELDS) | set(LOOSE_FIELDS) | set(EXTRA_FIELDS)


def test_the_whole_help_text_begins_with_its_first_line(
    catalogues: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ours = by_dest(catalogues[0])
    assert [d for d, e in ours.items() if not e["help"].startswith(e["help_first_line"])] == []
    assert ours["optimization_level"]["help"] == (
        "The optimization level. These levels trade startup time cost for\n"
        "performance, with -O0 having the best startup time and -O3 having the best\n"
        "performance. -O2 is used by default. See OptimizationLevel for full\n"
        "description."
    )


def test_same_dests_in_parser_order(catalogues: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    ours, reference = catalogues
    assert len(ours) == 321
    assert [e["dest"] for e in ours] == [e["dest"] for e in reference]


@pytest.mark.parametrize("field", EXACT_FIELDS)
def test_field_matches_reference(catalogues: tuple[list[dict[str, Any]], list[dict[str, Any]]], field: str) -> None:
    ours, reference = (by_dest(c) for c in catalogues)
    differences = {
        dest: {"ours": ours[dest].get(field), "reference": theirs.get(field)}
        for dest, theirs in reference.items()
        if ours[dest].get(field) != theirs.get(field)
    }
    assert differences == {}


def test_help_first_line_matches_modulo_whitespace(
    catalogues: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ours, reference = (by_dest(c) for c in catalogues)
    differences = {
        dest: (ours[dest]["help_first_line"], theirs["help_first_line"])
        for dest, theirs in reference.items()
        if ours[dest]["help_first_line"].split() != theirs["help_first_line"].split()
    }
    assert differences == {}
    assert all(entry["help_first_line"] for entry in ours.values()), "help text was not filled in"


def test_facts_section_1_3a_flag_changes() -> None:
    """283 options in 0.27.0, 321 in 0.33.0; three gone (vllm-facts.md 1.3a)."""
    catalogue_dir = OURS.parent
    old = by_dest(load(catalogue_dir / "vllm-0.27.0.json"))
    new = by_dest(load(catalogue_dir / "vllm-0.33.0.json"))
    assert (len(old), len(new)) == (283, 321)
    assert sorted(set(old) - set(new)) == [
        "calculate_kv_scales",
        "enable_bf16x3_router_gemm",
        "override_attention_dtype",
    ]
    assert len(set(new) - set(old)) == 41
    new_aliases = [
        o for dest in set(old) & set(new) for o in new[dest]["option_strings"] if o not in old[dest]["option_strings"]
    ]
    assert len(new_aliases) == 44
    assert new["mamba_cache_mode"]["choices"] == ["align", "none"]
    assert new["mamba_cache_mode"]["deprecated"] is True
    assert old["mamba_cache_mode"]["choices"] == ["align", "all", "none"]
    assert "--disable-prefix-caching" in new["enable_prefix_caching"]["accepted_option_strings"]
    assert "--disable-prefix-caching" not in old["enable_prefix_caching"]["accepted_option_strings"]
