"""`profilekit lint`: the whole repository in one run (DESIGN section 10)."""

from __future__ import annotations

import json

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_check_output import _assert_sarif_2_1_0

NEMO = """
[model]
architecture = "NemotronHForCausalLM"

[serve]
model = "nvidia/Nemotron-H-8B-Base-8K"
"""
FAST = """
[layer]
extends = ["nemo"]

[serve]
use_replayssm = true

[env]
VLLM_USE_V2_MODEL_RUNNER = "0"
"""
OFFLOAD = """
[layer]
extends = ["nemo"]

[serve]
kv_offloading_size = 8
"""


def test_the_example_repository_lints_clean(run: Run) -> None:
    result = run("lint", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.err == ""
    line = result.out.strip()
    assert line.startswith("lint: ") and line.endswith(" checked, no problems found (vLLM 0.33.0)"), line
    assert run("lint", "--strict", cwd=REPO_ROOT).code == 0


def test_every_problem_of_the_repository_in_one_run(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "nemo.toml": NEMO,
            "broken.toml": "[serve\nx = 1\n",
            "typo.toml": "[layer]\nextend = []\n",
            "mixin.toml": "[layer]\nabstract = true\n\n[serve]\nmax_num_seqz = 4\n",
            "secret.toml": '[layer]\nextends = ["nemo"]\n\n[env]\nHF_TOKEN = "hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"\n',
        },
        config='[vllm]\nversion = "0.33.0"\n\n[lint]\nstacks = ["nemo+nosuch", "mixin"]\n',
    )
    result = run("lint", cwd=root)
    assert result.code == 1, result
    assert result.out == (
        "profilekit.toml:5:11: error unknown-layer lint.stacks[0] names no layer: 'nosuch'\n"
        "    fix: fix the name, or remove the stack from [lint] stacks\n"
        "profilekit.toml:5:26: error unknown-layer lint.stacks[1]: 'mixin' names only abstract layers, which are "
        "never deployed alone\n"
        "    fix: add a deployable layer to the stack\n"
        "profiles/broken.toml:1:7: error toml-syntax invalid TOML: Expected ']' at the end of a table declaration\n"
        "    fix: fix the TOML syntax at that position\n"
        "profiles/mixin.toml:5:1: error unknown-option serve.max_num_seqz: vLLM 0.33.0 has no option "
        "'max_num_seqz'\n"
        "    fix: did you mean 'max_num_seqs'?\n"
        "profiles/secret.toml:5:1: error literal-secret env.HF_TOKEN holds a token-shaped value that looks like a "
        "credential; a secret written into a profile ends up in git history and in every rendered file (the value "
        "is not shown here)\n"
        "    in stack secret\n"
        "    fix: write HF_TOKEN = { secret = true } and pass the value from the launching environment; then revoke "
        "the exposed credential\n"
        "profiles/typo.toml:2:1: error invalid-layer layer.extend: unknown key\n"
        "    fix: [layer] keys are description, extends, group, provides, conflicts, requires, abstract, unset, "
        "ignore\n"
        "6 errors, 0 warnings\n"
    )


def test_an_undeclared_conflict_between_two_layers_is_a_warning(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO, "fast.toml": FAST, "offload.toml": OFFLOAD})
    result = run("lint", cwd=root)
    assert result.code == 0, result
    assert result.out.splitlines()[0] == (
        "profiles/fast.toml:1:1: warning undeclared-conflict layers 'fast', 'offload' break replayssm-kv-connector "
        "together, and neither declares the other exclusive (check fast+offload: use_replayssm = true with the "
        'OffloadingConnector (kv_role "kv_both") that kv_offloading_size = 8 creates; vLLM 0.33.0 refuses to start: '
        '"--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)")'
    )
    assert result.out.splitlines()[-2] == (
        "    fix: declare it in the [layer] table of 'fast': conflicts = [\"offload\"] (or put the layers in one "
        'group); a conflict with a capability (e.g. "@kv-connector") covers every layer that brings it'
    )
    assert run("lint", "--strict", cwd=root).code == 1
    assert run("lint", "--combinations", "none", cwd=root).out.startswith("lint: 3 files, 3 stacks checked")


def test_a_declared_conflict_silences_the_pair(make_repo: MakeRepo, run: Run) -> None:
    declared = FAST.replace('extends = ["nemo"]', 'extends = ["nemo"]\nconflicts = ["@kv-connector"]')
    root = make_repo({"nemo.toml": NEMO, "fast.toml": declared, "offload.toml": OFFLOAD})
    result = run("lint", cwd=root)
    assert result.code == 0, result
    assert result.out == "lint: 3 files, 3 stacks, 3 combinations checked, no problems found (vLLM 0.33.0)\n"


def test_all_subsets_finds_a_conflict_only_three_layers_make(make_repo: MakeRepo, run: Run) -> None:
    model = NEMO.replace("[model]", "[layer]\nabstract = true\n\n[model]")
    replay = '[layer]\nextends = ["nemo"]\n\n[serve]\nuse_replayssm = true\nmamba_backend = "flashinfer"\nenable_prefix_caching = false\n'
    spec = '[layer]\nextends = ["nemo"]\n\n[serve]\nspeculative_config = { method = "ngram", num_speculative_tokens = 3 }\n'
    short = '[layer]\nextends = ["nemo"]\n\n[serve]\nreplayssm_buffer_len = 2\n'
    root = make_repo({"nemo.toml": model, "replay.toml": replay, "spec.toml": spec, "short.toml": short})
    pairs = run("lint", cwd=root)
    assert pairs.out == "lint: 4 files, 3 stacks, 3 combinations checked, no problems found (vLLM 0.33.0)\n"
    every = run("lint", "--combinations", "all", cwd=root)
    assert every.code == 0, every
    assert every.out.splitlines()[0] == (
        "profiles/replay.toml:1:1: warning undeclared-conflict layers 'replay', 'short', 'spec' break "
        "replayssm-speculative together, and none of them declares the others exclusive (check replay+short+spec: "
        "use_replayssm = true with speculative decoding (num_speculative_tokens = 3) and replayssm_buffer_len = 2; "
        'vLLM 0.33.0 refuses to start: "FlashInfer ReplaySSM speculative decoding requires --replayssm-buffer-len '
        '>= 1 + num_speculative_tokens (4); got 2")'
    )


def test_lint_formats(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO, "fast.toml": FAST, "offload.toml": OFFLOAD, "bad.toml": "[serve\n"})
    data = json.loads(run("lint", "--format", "json", cwd=root).out)
    assert data["summary"] == {"errors": 1, "warnings": 1, "ignored": 0, "ignored_by_rule": {}}
    assert [f["rule"] for f in data["findings"]] == ["toml-syntax", "undeclared-conflict"]
    assert data["findings"][1]["stack"] == "fast+offload"
    github = run("lint", "--format", "github", cwd=root).out.splitlines()
    assert github[0].startswith("::error file=profiles/bad.toml,line=1,col=7,title=toml-syntax::invalid TOML: ")
    assert github[1].startswith("::warning file=profiles/fast.toml,line=1,col=1,title=undeclared-conflict::")
    sarif = json.loads(run("lint", "--format", "sarif", cwd=root).out)
    _assert_sarif_2_1_0(sarif)
    assert [r["level"] for r in sarif["runs"][0]["results"]] == ["error", "warning"]


def test_a_broken_profilekit_toml_is_reported_in_the_asked_format(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO}, config="[vllm\n")
    result = run("lint", "--format", "json", cwd=root)
    assert result.code == 1
    assert [f["rule"] for f in json.loads(result.out)["findings"]] == ["toml-syntax"]


def test_bad_combinations_option_is_a_usage_error(run: Run) -> None:
    result = run("lint", "--combinations", "some", cwd=REPO_ROOT)
    assert result.code == 2
    assert result.err == "profilekit: error: unknown --combinations 'some'\n  hint: choose one of: none, pairs, all\n"


def test_a_fault_reached_through_many_stacks_is_reported_once(make_repo: MakeRepo, run: Run) -> None:
    bad = '[layer]\nextends = ["nemo"]\n\n[serve]\nuse_replayssm = true\nmamba_backend = "cpu"\n'
    root = make_repo(
        {"nemo.toml": NEMO, "bad.toml": bad, "site.toml": '[layer]\nabstract = true\n\n[env]\nX = "1"\n'},
        config='[vllm]\nversion = "0.33.0"\n\n[lint]\nstacks = ["bad+site"]\n',
    )
    result = run("lint", cwd=root)
    assert result.out.count("error replayssm-backend") == 1


A_B_CYCLE = {"a.toml": '[layer]\nextends = ["b"]\n', "b.toml": '[layer]\nextends = ["a"]\n'}


def test_an_extends_cycle_is_reported_once_and_no_stack_that_reaches_it_is_composed(
    make_repo: MakeRepo, run: Run
) -> None:
    """Each cycle once, as `list` reports it, with the stacks lint could not compose because of it."""
    root = make_repo(
        {
            **A_B_CYCLE,
            "app.toml": '[layer]\nextends = ["nosuch", "a"]\n\n[serve]\nmodel = "m"\n',
            "c.toml": '[layer]\nextends = ["d"]\n',
            "d.toml": '[layer]\nextends = ["c"]\n',
            "base.toml": '[serve]\nmodel = "m"\n',
        },
        config='[vllm]\nversion = "0.33.0"\n\n[lint]\nstacks = ["base+app"]\n',
    )
    result = run("lint", cwd=root)
    assert result.code == 1, result
    assert result.out == (
        "profiles/app.toml:2:12: error unknown-layer layer.extends[0] names no layer: 'nosuch'\n"
        "    fix: create the layer, or remove the entry\n"
        "profiles/b.toml:2:12: error extends-cycle extends forms a cycle: a -> b -> a\n"
        "    not composed: 4 stacks reach this cycle through extends (a, app, b, base+app)\n"
        "    fix: remove one of these `extends` entries\n"
        "profiles/d.toml:2:12: error extends-cycle extends forms a cycle: c -> d -> c\n"
        "    not composed: 2 stacks reach this cycle through extends (c, d)\n"
        "    fix: remove one of these `extends` entries\n"
        "3 errors, 0 warnings\n"
    )
    listed = run("list", cwd=root)  # the same cycles, in the same words
    assert "profiles/b.toml:2:12: error extends-cycle extends forms a cycle: a -> b -> a\n" in listed.out
    assert "profiles/d.toml:2:12: error extends-cycle extends forms a cycle: c -> d -> c\n" in listed.out


def test_a_pair_with_a_member_in_a_cycle_cannot_be_composed(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            **A_B_CYCLE,
            "base.toml": '[serve]\nmodel = "m"\n',
            "other.toml": '[serve]\nmodel = "n"\n',
        }
    )
    result = run("lint", "--format", "markdown", cwd=root)
    assert result.code == 1, result
    assert (
        "4 deployable layers, 6 pairs: 1 compose, 0 declared exclusive, 0 undeclared conflicts, 5 cannot be composed.\n"
    ) in result.out
    assert "| `a` | — | 💥 | 💥 | 💥 |\n" in result.out
    assert "| `base` | 💥 | 💥 | — | ✅ |\n" in result.out


def test_pairs_in_one_extends_chain_give_what_composing_them_gives(make_repo: MakeRepo, run: Run) -> None:
    """A pair whose one member extends the other is that member's stack (fast+fast2 is fast2): its verdict is
    taken from the member, not composed again; every other pair is composed (matrix checked against that)."""
    root = make_repo(
        {
            "nemo.toml": NEMO,
            "fast.toml": FAST,
            "offload.toml": OFFLOAD,
            "fast2.toml": '[layer]\nextends = ["fast"]\ngroup = "g"\n\n[serve]\nmax_num_seqs = 4\n',
            "fast3.toml": '[layer]\nextends = ["fast2"]\ngroup = "g"\n',
            "c1.toml": '[layer]\nextends = ["offload"]\nconflicts = ["nemo"]\n',
            "c2.toml": '[layer]\nextends = ["c1"]\n',
            "o2.toml": '[layer]\nextends = ["offload"]\n\n[serve]\nmax_num_seqs = 2\n',
        }
    )
    result = run("lint", "--format", "markdown", cwd=root)
    assert result.code == 1, result
    assert "8 deployable layers, 28 pairs: 6 compose, 18 declared exclusive, 4 undeclared conflicts.\n" in result.out
    assert result.out.splitlines()[-10:] == [
        "| | `c1` | `c2` | `fast` | `fast2` | `fast3` | `nemo` | `o2` | `offload` |",
        "| --- | :---: | :---: | :---: | :---: | :---: | :---: | :---: | :---: |",
        "| `c1` | — | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo`, group `g` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` |",
        "| `c2` | 🔒 conflicts `nemo` | — | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo`, group `g` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` |",
        "| `fast` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | — | ✅ | 🔒 group `g` | ✅ | ⚠️ `replayssm-kv-connector` | ⚠️ `replayssm-kv-connector` |",
        "| `fast2` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | ✅ | — | 🔒 group `g` | ✅ | ⚠️ `replayssm-kv-connector` | ⚠️ `replayssm-kv-connector` |",
        "| `fast3` | 🔒 conflicts `nemo`, group `g` | 🔒 conflicts `nemo`, group `g` | 🔒 group `g` | 🔒 group `g` | — | 🔒 group `g` | 🔒 group `g` | 🔒 group `g` |",
        "| `nemo` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | ✅ | ✅ | 🔒 group `g` | — | ✅ | ✅ |",
        "| `o2` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | ⚠️ `replayssm-kv-connector` | ⚠️ `replayssm-kv-connector` | 🔒 group `g` | ✅ | — | ✅ |",
        "| `offload` | 🔒 conflicts `nemo` | 🔒 conflicts `nemo` | ⚠️ `replayssm-kv-connector` | ⚠️ `replayssm-kv-connector` | 🔒 group `g` | ✅ | ✅ | — |",
    ]
