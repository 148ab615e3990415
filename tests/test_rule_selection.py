"""Noise and rule selection (issue 25, item 4): `model-facts-missing` once per model, a model's config.json once
for the repository (`[models."ORG/NAME"]`), and choosing rules as ruff does (`[lint] select`/`ignore`,
`--select`/`--ignore`, a layer's `[layer] ignore` with its reason). Errors are never ignored.

Everything through the real CLI, on repositories written to disk; docs/RULES.md, "Choosing rules", is the
contract.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MakeRepo, Run

CONFIG = '[vllm]\nversion = "0.33.0"\n'
BASE = """
    [layer]
    abstract = true

    [serve]
    model = "acme/llm-7b"
    max_model_len = 4096
"""
SINGLE = """
    [layer]
    extends = ["base"]

    [serve]
    tensor_parallel_size = 2
"""
PAIR = """
    [layer]
    extends = ["base"]

    [roles.prefill.serve]
    port = 8100

    [roles.decode.serve]
    port = 8200

    [roles.decode]
    kind = "vllm"

    [roles.prefill]
    kind = "vllm"
"""
FIX = (
    '    fix: give profilekit the model\'s config.json once, in profilekit.toml: [models."acme/llm-7b"] config = '
    '"path/to/config.json" (relative to the repository root); or in a layer, [model] config = "...", or serve a '
    "local model folder\n"
)
ONCE = (
    "profiles/base.toml:5:1: warning model-facts-missing vLLM 0.33.0's checks against the config.json of model "
    "'acme/llm-7b' did not run: profilekit does not have that file\n"
    "    profiles/base.toml:6:1: serve.max_model_len (layer base)\n"
    "    profiles/a.toml:5:1: serve.tensor_parallel_size (layer a)\n"
    "    not checked: max_model_len = 4096 against the model's positions (stack a, role serve; stack b, roles "
    "decode, prefill)\n"
    "    not checked: tensor_parallel_size = 2 against the attention heads (stack a, role serve)\n" + FIX
)


def newcomer(make_repo: MakeRepo, config: str = CONFIG, base: str = BASE) -> Path:
    """The issue's newcomer: a Hugging Face id profilekit has no config.json for, served by two stacks, three roles."""
    return make_repo({"base.toml": base, "a.toml": SINGLE, "b.toml": PAIR}, config=config)


# ---- model-facts-missing once per model ------------------------------------------------------------------


def test_check_reports_a_missing_config_json_once_for_every_stack_and_role(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo)
    result = run("check", "a", "b", cwd=root)
    assert (result.code, result.err) == (0, "")
    assert result.out == ONCE + "0 errors, 1 warning\n"
    assert run("check", "a", "b", "--strict", cwd=root).code == 1


def test_lint_and_render_report_it_once_too(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo)
    linted = run("lint", cwd=root)
    assert linted.code == 0 and linted.out.count("model-facts-missing") == 1, linted
    assert "(stack a, role serve; stack b, roles decode, prefill)" in linted.out
    rendered = run("render", "a", "b", "--out", root / "out", cwd=root)
    assert rendered.code == 0 and rendered.err == ONCE, rendered
    assert (root / "out" / "b" / "prefill.sh").is_file()


def test_the_json_finding_names_every_check_it_skipped(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo)
    data = json.loads(run("check", "a", "b", "--format", "json", cwd=root).out)
    [finding] = data["findings"]
    assert "stack" not in finding and "role" not in finding  # it is about the model, for several of each
    assert [loc["key"] for loc in finding["locations"]] == [
        "serve.model",
        "serve.max_model_len",
        "serve.tensor_parallel_size",
    ]
    assert finding["notes"] == [
        "not checked: max_model_len = 4096 against the model's positions (stack a, role serve; stack b, roles "
        "decode, prefill)",
        "not checked: tensor_parallel_size = 2 against the attention heads (stack a, role serve)",
    ]


# ---- [models."ORG/NAME"] in profilekit.toml ------------------------------------------------------------------


def with_models(make_repo: MakeRepo, entry: str, config_json: str | None, path: str = "models/llm-7b.json") -> Path:
    root = newcomer(make_repo, config=CONFIG + entry)
    if config_json is not None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(config_json, encoding="utf-8")
    return root


THREE_HEADS = '{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 3, "max_position_embeddings": 8192}'


def test_a_models_entry_checks_every_layer_that_serves_the_model(make_repo: MakeRepo, run: Run) -> None:
    root = with_models(make_repo, '\n[models."ACME/LLM-7B"]\nconfig = "models/llm-7b.json"\n', THREE_HEADS)
    result = run("check", "a", "b", cwd=root)
    assert result.code == 1
    assert result.out == (
        "profiles/a.toml:5:1: error attention-heads-tensor-parallel tensor_parallel_size = 2 with a model of 3 "
        'attention heads (config.json); vLLM 0.33.0 refuses to start: "Total number of attention heads (3) must be '
        'divisible by tensor parallel size (2)."\n'
        "    in stack a, role serve\n"
        "    profiles/base.toml:5:1: serve.model (layer base)\n"
        '    profilekit.toml:5:1: models."ACME/LLM-7B".config\n'
        "    fix: set tensor_parallel_size to a divisor of 3: 1, 3\n"
        "1 error, 0 warnings\n"
        "b: no problems found (vLLM 0.33.0)\n"
    )


def test_a_models_entry_may_name_the_folder_of_the_config_json(make_repo: MakeRepo, run: Run) -> None:
    entry = '\n[models."acme/llm-7b"]\nconfig = "models/llm-7b"\n'
    root = with_models(make_repo, entry, THREE_HEADS, path="models/llm-7b/config.json")
    assert "error attention-heads-tensor-parallel" in run("check", "a", cwd=root).out


@pytest.mark.parametrize(
    ("config_json", "problem", "fix"),
    [
        (
            None,
            "models/llm-7b.json does not exist",
            "name the model's config.json (or its folder), relative to the repository root",
        ),
        (
            '{"architectures": ',
            "models/llm-7b.json is not valid JSON (Expecting value at line 1)",
            "name the model's config.json (or its folder), relative to the repository root",
        ),
        (
            '{"num_attention_heads": 3}',
            "models/llm-7b.json has no `architectures` list",
            'name the model class in its "architectures" list, as vLLM reads it',
        ),
    ],
)
def test_a_models_entry_whose_file_cannot_be_used_is_an_error_at_its_line(
    make_repo: MakeRepo, run: Run, config_json: str | None, problem: str, fix: str
) -> None:
    root = with_models(make_repo, '\n[models."acme/llm-7b"]\nconfig = "models/llm-7b.json"\n', config_json)
    expected = f'profilekit.toml:5:1: error model-config models."acme/llm-7b".config: {problem}\n    fix: {fix}\n'
    checked = run("check", "a", cwd=root)
    assert checked.code == 1 and checked.out.startswith(expected), checked
    linted = run("lint", cwd=root)
    assert linted.code == 1 and linted.out.startswith(expected), linted
    rendered = run("render", "a", "--out", root / "out", cwd=root)
    assert rendered.code == 1 and not (root / "out").exists()


def test_a_models_entry_whose_file_lacks_a_key_says_to_add_it_not_to_give_the_file(
    make_repo: MakeRepo, run: Run
) -> None:
    entry = '\n[models."acme/llm-7b"]\nconfig = "models/llm-7b.json"\n'
    root = with_models(make_repo, entry, '{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 4}')
    result = run("check", "b", cwd=root)
    assert (result.code, result.out) == (
        0,
        "profiles/base.toml:5:1: warning model-facts-missing vLLM 0.33.0's checks against the config.json of model "
        "'acme/llm-7b' did not run: the file lacks the keys they read\n"
        "    in stack b\n"
        '    profilekit.toml:5:1: models."acme/llm-7b".config\n'
        "    profiles/base.toml:6:1: serve.max_model_len (layer base)\n"
        "    not checked: max_model_len = 4096 against the model's positions (the config.json has no "
        "max_position_embeddings or other length key) (roles decode, prefill)\n"
        "    fix: add the keys each `not checked` note names to that config.json, as the model's published "
        "config.json has them, or name a complete one\n"
        "0 errors, 1 warning\n",
    )


def test_a_models_entry_no_layer_serves_is_named_with_the_id_it_may_mean(make_repo: MakeRepo, run: Run) -> None:
    root = with_models(make_repo, '\n[models."acme/llm7b"]\nconfig = "models/llm-7b.json"\n', THREE_HEADS)
    result = run("lint", cwd=root)
    assert (
        'profilekit.toml:5:1: warning unused-model-config models."acme/llm7b": no layer serves this model\n'
        "    fix: did you mean 'acme/llm-7b'?\n"
    ) in result.out
    # the stacks of `check` are not the whole repository: it says nothing of a model none of them serves
    assert "unused-model-config" not in run("check", "a", cwd=root).out


# ---- the config.json keys profilekit ships for the models of its examples ------------------------------------


def test_a_well_known_model_is_checked_against_the_config_json_profilekit_ships(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {"s.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 3\nmax_model_len = 50000\n'}
    )
    result = run("check", "s", cwd=root)
    assert result.code == 1
    assert "Total number of attention heads (16) must be divisible by tensor parallel size (3)." in result.out
    assert "max_model_len = 50000 is more than the model allows (max_position_embeddings = 40960" in result.out
    assert "model-facts-missing" not in result.out


# ---- choosing rules -----------------------------------------------------------------------------------------


def test_lint_ignore_in_profilekit_toml_leaves_the_warning_out_and_counts_it(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo, config=CONFIG + '\n[lint]\nignore = ["model-facts-missing"]\n')
    checked = run("check", "a", "b", "--strict", cwd=root)
    assert (checked.code, checked.out) == (
        0,
        "0 errors, 0 warnings, 1 ignored\na: no problems found (vLLM 0.33.0)\nb: no problems found (vLLM 0.33.0)\n",
    )
    linted = run("lint", "--strict", cwd=root)
    assert (linted.code, linted.out) == (
        0,
        "0 errors, 0 warnings, 1 ignored\nlint: 3 files, 2 stacks, 1 combinations checked, no problems found (vLLM "
        "0.33.0)\n",
    )
    rendered = run("render", "a", "b", "--out", root / "out", cwd=root)
    assert (rendered.code, rendered.err) == (0, "0 errors, 0 warnings, 1 ignored\n")
    data = json.loads(run("check", "a", "b", "--format", "json", cwd=root).out)
    assert data["findings"] == []
    assert data["summary"] == {
        "errors": 0,
        "warnings": 0,
        "ignored": 1,
        "ignored_by_rule": {"model-facts-missing": 1},
    }


def test_sarif_keeps_an_ignored_warning_as_a_suppressed_result(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo, config=CONFIG + '\n[lint]\nignore = ["model-facts-missing"]\n')
    [result] = json.loads(run("check", "a", "--format", "sarif", cwd=root).out)["runs"][0]["results"]
    assert result["ruleId"] == "model-facts-missing"
    assert result["suppressions"] == [{"kind": "external", "justification": "[lint] ignore of profilekit.toml"}]
    shown = json.loads(run("check", "a", "--format", "sarif", "--select", "model-facts-missing", cwd=root).out)
    assert "suppressions" not in shown["runs"][0]["results"][0]


def test_the_command_line_comes_over_profilekit_toml(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo, config=CONFIG + '\n[lint]\nignore = ["model-facts-missing"]\n')
    # --select starts over: the rule profilekit.toml ignores is shown again
    assert run("check", "a", "--select", "model-facts-missing", cwd=root).out.count(" model-facts-missing ") == 1
    # --ignore adds to what is left out; --select of another rule leaves this one out
    plain = newcomer(make_repo)
    for args in (["--ignore", "model-facts-missing"], ["--select", "undeclared-conflict,unknown-env-var"]):
        result = run("check", "a", "b", *args, "--strict", cwd=plain)
        assert (result.code, result.out.splitlines()[0]) == (0, "0 errors, 0 warnings, 1 ignored"), result


def test_a_rule_id_that_names_no_rule_gets_did_you_mean(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo)
    for command in (["check", "a"], ["lint"], ["render", "a"]):
        result = run(*command, "--ignore", "model-fact-missing", cwd=root)
        assert (result.code, result.out) == (2, ""), result
        assert result.err == (
            "profilekit: error: --ignore model-fact-missing: no rule has that id\n"
            "  hint: did you mean 'model-facts-missing'?\n"
        )
    configured = newcomer(make_repo, config=CONFIG + '\n[lint]\nignore = ["model-fact-missing"]\n')
    result = run("check", "a", cwd=configured)
    assert result.code == 1
    assert result.out.startswith(
        "profilekit.toml:5:11: error unknown-rule lint.ignore[0] names no rule: 'model-fact-missing'\n"
        "    fix: did you mean 'model-facts-missing'?\n"
    )


# ---- [layer] ignore, with its reason --------------------------------------------------------------------------


def test_a_layer_ignores_a_rule_for_the_findings_reported_at_it(make_repo: MakeRepo, run: Run) -> None:
    reason = "served from the team's mirror, whose config.json is checked there"
    base = BASE.replace("abstract = true", f'abstract = true\nignore = {{ "model-facts-missing" = "{reason}" }}')
    root = newcomer(make_repo, base=base)
    result = run("check", "a", "b", "--strict", cwd=root)
    assert (result.code, result.out.splitlines()[0]) == (0, "0 errors, 0 warnings, 1 ignored")
    # --select does not undo a layer's own ignore
    assert run("check", "a", "--select", "model-facts-missing", cwd=root).out.splitlines()[0] == (
        "0 errors, 0 warnings, 1 ignored"
    )
    [sarif] = json.loads(run("check", "a", "--format", "sarif", cwd=root).out)["runs"][0]["results"]
    assert sarif["suppressions"] == [{"kind": "inSource", "justification": f"[layer] ignore of base: {reason}"}]


def test_a_layer_ignore_without_a_reason_is_an_error_with_the_form(make_repo: MakeRepo, run: Run) -> None:
    base = BASE.replace("abstract = true", 'abstract = true\nignore = ["model-facts-missing"]')
    result = run("check", "a", cwd=newcomer(make_repo, base=base))
    assert result.code == 1
    assert result.out == (
        "profiles/base.toml:3:1: error invalid-layer layer.ignore: expected a table of rule ids, each with its "
        "reason, got an array\n"
        '    fix: write each ignored rule with its reason: ignore = { "model-facts-missing" = "why its warnings do '
        'not apply to this layer" }\n'
        "1 error, 0 warnings\n"
    )
    blank = BASE.replace("abstract = true", 'abstract = true\nignore = { "model-facts-missing" = " " }')
    result = run("check", "a", cwd=newcomer(make_repo, base=blank))
    assert "error invalid-layer layer.ignore.model-facts-missing: ignoring 'model-facts-missing' needs a reason, " in (
        result.out
    )


def test_a_layer_ignore_of_no_rule_gets_did_you_mean(make_repo: MakeRepo, run: Run) -> None:
    base = BASE.replace("abstract = true", 'abstract = true\nignore = { "model-fact-missing" = "a mirror" }')
    root = newcomer(make_repo, base=base)
    expected = (
        "profiles/base.toml:3:12: error unknown-rule layer.ignore names no rule: 'model-fact-missing'\n"
        "    fix: did you mean 'model-facts-missing'?\n"
    )
    for command in (["check", "a"], ["lint"]):
        result = run(*command, cwd=root)
        assert result.code == 1 and expected in result.out, result


# ---- errors are never ignored ---------------------------------------------------------------------------------


def test_an_error_is_reported_and_stops_render_whatever_ignores_it(make_repo: MakeRepo, run: Run) -> None:
    entry = '\n[models."acme/llm-7b"]\nconfig = "models/llm-7b.json"\n[lint]\nignore = ["attention-heads-tensor-parallel"]\n'
    root = with_models(make_repo, entry, THREE_HEADS)
    checked = run("check", "a", "--ignore", "max-model-len-positions", cwd=root)
    assert checked.code == 1
    assert (
        "    not ignored: [lint] ignore of profilekit.toml names attention-heads-tensor-parallel, but an error is "
        "always reported\n"
    ) in checked.out
    assert "error max-model-len-positions" not in checked.out  # 4096 <= 8192: nothing to ignore there
    rendered = run("render", "a", "--out", root / "out", "--ignore", "attention-heads-tensor-parallel", cwd=root)
    assert rendered.code == 1 and "nothing rendered: a has errors" in rendered.err
    assert not (root / "out").exists()


def test_a_file_profilekit_cannot_read_is_an_error_whatever_the_selection(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"s.toml": "[serve\n"}, config=CONFIG + '\n[lint]\nselect = ["model-facts-missing"]\n')
    result = run("check", "s", "--ignore", "toml-syntax", cwd=root)
    assert result.code == 1 and "error toml-syntax" in result.out
    assert run("lint", "--ignore", "toml-syntax", cwd=root).code == 1


def test_markdown_counts_what_was_left_out_and_to_release_refuses_a_selection(make_repo: MakeRepo, run: Run) -> None:
    root = newcomer(make_repo, config=CONFIG + '\n[lint]\nignore = ["model-facts-missing"]\n')
    shown = run("check", "a", "--format", "markdown", cwd=root).out
    assert "✅ `a`: **no problems found** (vLLM 0.33.0); 1 ignored\n" in shown
    assert "(vLLM 0.33.0); 1 ignored\n" in run("lint", "--format", "markdown", cwd=root).out
    result = run("lint", "--to-release", "0.32.0", "--ignore", "model-facts-missing", cwd=root)
    assert (result.code, result.err) == (
        2,
        "profilekit: error: --to-release reports what changes between releases, and --select and --ignore do not "
        "choose among it\n  hint: drop --select and --ignore, or --to-release\n",
    )
