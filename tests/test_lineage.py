"""lineage.py: cycles found in one walk of the extends graph, and each layer composed on its parent's merge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profilekit.compose.lineage import cycle_reach
from profilekit.compose.model import Stack
from profilekit.errors import Finding
from profilekit.session import Session
from tests.conftest import REPO_ROOT, MakeRepo

# the examples of sources (tests/test_sources.py) are refused before any layer is read: none to compose
EXAMPLES = sorted(
    p
    for p in (REPO_ROOT / "tests" / "rule_examples").iterdir()
    if (p / "profiles").is_dir() and "[sources." not in (p / "profilekit.toml").read_text(encoding="utf-8")
)


def test_every_layer_that_reaches_a_cycle_is_mapped_to_a_member_of_it() -> None:
    graph = {
        "a": ["b"],
        "b": ["c"],
        "c": ["a"],  # a -> b -> c -> a
        "x": ["a"],  # leads into it
        "y": ["z"],  # a clean chain
        "z": [],
        "s": ["s"],  # extends itself
        "u": ["nosuch", "y", "s", "x"],  # an unknown name leads nowhere; the first cycle reached is s's
        "v": ["y"],
    }
    assert cycle_reach(graph) == {"a": "a", "b": "a", "c": "a", "x": "a", "s": "s", "u": "s"}


@pytest.mark.parametrize("length", [10_000])
def test_a_long_chain_or_cycle_is_walked_without_recursion(length: int) -> None:
    chain = {f"c{i}": [f"c{i + 1}"] if i + 1 < length else [] for i in range(length)}
    assert cycle_reach(chain) == {}
    cycle = {f"c{i}": [f"c{(i + 1) % length}"] for i in range(length)}
    reach = cycle_reach(cycle)
    assert len(reach) == length and len(set(reach.values())) == 1


def _finding(f: Finding) -> dict[str, Any]:
    return {**f.as_dict(), "notes": list(f.notes)}


def _stack(stack: Stack | None) -> Any:
    if stack is None:
        return None
    roles = {
        name: (sorted(role.scope.entries.items(), key=repr), sorted(role.scope.removed.items(), key=repr), role.command)
        for name, role in stack.roles.items()
    }
    return stack.spec, stack.layer_names, roles


def _assert_layer_stacks_as_composed_alone(root: Path) -> None:
    """Every layer composed on its parent's merge gives what composing it alone gives, finding for finding."""
    shared = Session.open(repo=root, vllm_version=None)
    for name in shared.layers.files:
        alone = Session.open(repo=root, vllm_version=None)
        stack, problems = shared.compose_layer(name)
        expected, expected_problems = alone.compose([name], name)
        assert _stack(stack) == _stack(expected), (root, name)
        assert [_finding(f) for f in problems] == [_finding(f) for f in expected_problems], (root, name)
        if stack is not None and expected is not None:
            checked = [_finding(f) for f in shared.check(stack)]
            assert checked == [_finding(f) for f in alone.check(expected)], (root, name)


@pytest.mark.parametrize("root", [REPO_ROOT, *EXAMPLES], ids=lambda p: p.name)
def test_sharing_a_parents_merge_changes_no_stack_of_the_examples(root: Path) -> None:
    _assert_layer_stacks_as_composed_alone(root)


@pytest.mark.parametrize("budget", [1_000_000, 3], ids=["kept", "past-the-budget"])
def test_sharing_a_parents_merge_keeps_unsets_roles_and_references_in_place(
    make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """A chain that unsets, defines and removes roles, refers to values and names things that do not exist;
    past the budget of kept top levels, the layers above compose from scratch, to the same stacks."""
    monkeypatch.setattr("profilekit.compose.lineage._TOP_BUDGET", budget)
    root = make_repo(
        {
            "base.toml": '[serve]\nmodel = "m"\nmax_num_seqs = 8\nport = 8000\n\n[env]\nA = "1"\n',
            "mixin.toml": '[layer]\nabstract = true\nprovides = ["fast"]\n\n[serve]\nenforce_eager = true\n',
            "two.toml": '[layer]\nextends = ["base", "mixin"]\n\n[serve]\nmax_num_seqs = 16\n',
            "unsets.toml": (
                '[layer]\nextends = ["two"]\nunset = ["serve.max_num_seqs", "serve.nosuch", "env.B", "bad key"]\n'
            ),
            "later.toml": '[layer]\nextends = ["unsets"]\n\n[env]\nB = "2"\nC = "${serve.port}"\nD = "${serve.no}"\n',
            "roles.toml": (
                '[layer]\nextends = ["later"]\nrequires = ["@fast", "base", "ghost"]\nconflicts = ["mixin"]\n\n'
                "[roles.prefill.serve]\nport = 8100\n\n[roles.decode.serve]\nport = 8200\n\n"
                '[roles.extra.env]\nX = "1"\n\n[roles.decode]\nkind = "vllm"\n\n[roles.prefill]\nkind = "vllm"\n'
            ),
            "drop.toml": '[layer]\nextends = ["roles"]\nunset = ["roles.decode", "roles.prefill.serve.nope"]\n',
            "top.toml": '[layer]\nextends = ["drop"]\ngroup = "g"\n\n[env]\nHF_TOKEN = { secret = true }\n',
            "broken.toml": '[layer]\nextends = ["top"]\n\n[serve\n',
            "above.toml": '[layer]\nextends = ["broken"]\n',
            "unknown.toml": '[layer]\nextends = ["nosuch"]\n',
        }
    )
    _assert_layer_stacks_as_composed_alone(root)
    node = Session.open(repo=root, vllm_version=None).lineages().node("top")
    assert node is not None and (node.top is None) == (budget == 3)


def test_a_chain_longer_than_a_checkpoint_lists_every_layer_in_order(make_repo: MakeRepo) -> None:
    """150 layers: nodes that keep their whole prefix (every 64th) and those that walk to one list the same."""
    files = {"l0.toml": '[serve]\nmodel = "m"\n'}
    for i in range(1, 150):
        body = f"[serve]\nmax_num_seqs = {i}\n" if i % 7 == 0 else ""
        body += f"[roles.r{i}.serve]\nport = {9000 + i}\n" if i % 50 == 0 else ""
        files[f"l{i}.toml"] = f'[layer]\nextends = ["l{i - 1}"]\n' + body
    _assert_layer_stacks_as_composed_alone(make_repo(files))


def test_a_10000_layer_chain_is_linearised_and_spanned_without_recursion(make_repo: MakeRepo) -> None:
    length = 10_000
    files = {f"c{i}.toml": f'[layer]\nextends = ["c{i + 1}"]\n' for i in range(length - 1)}
    files[f"c{length - 1}.toml"] = '[serve]\nmodel = "m"\n'
    session = Session.open(repo=make_repo(files), vllm_version=None)
    lineages = session.lineages()
    node = lineages.node("c0")
    assert node is not None and node.size == length
    assert [layer.name for layer in node.layers()] == [f"c{i}" for i in reversed(range(length))]
    assert lineages.within("c0", "c9999") == "c0" and lineages.within("c5000", "c1") == "c1"
    stack, problems = session.compose_layer("c0")
    assert problems == [] and stack is not None and stack.roles["serve"].serve == {"model": "m"}
