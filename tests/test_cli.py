"""End-to-end CLI behaviour: exit codes and whole messages (DESIGN section 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, MakeRepo, Run


def test_toml_syntax_error_names_file_line_and_column(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"base.toml": "[serve]\nmodel = 'm'\nport = \n"})
    result = run("--repo", root, "show", "base")
    assert result.code == 1
    assert result.err == (
        "profiles/base.toml:3:8: error toml-syntax invalid TOML: Invalid value\n"
        "    fix: fix the TOML syntax at that position\n"
        "1 error, 0 warnings\n"
    )


def test_schema_errors_name_key_and_line_and_are_all_collected(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "good.toml": "[serve]\nmodel = 'm'\n",
            "bad.toml": """
            [layer]
            description = "two problems"
            abstract = "yes"
            colour = "blue"

            [env]
            TOKEN = 5
            OTHER = { secret = false }
        """,
            "broken.toml": "[serve\n",
        }
    )
    result = run("--repo", root, "list")
    assert result.code == 1
    assert result.out == (
        "good  \n"
        "profiles/bad.toml:3:1: error invalid-layer layer.abstract: expected a boolean, got a string\n"
        "profiles/bad.toml:4:1: error invalid-layer layer.colour: unknown key\n"
        "    fix: [layer] keys are description, extends, group, provides, conflicts, requires, abstract, unset, "
        "ignore\n"
        "profiles/bad.toml:7:1: error invalid-layer env.TOKEN: expected a string or { secret = true }, got an integer\n"
        '    fix: env values are strings (quote numbers: "1") or { secret = true }\n'
        "profiles/bad.toml:8:11: error invalid-layer env.OTHER.secret: must be `secret = true`\n"
        '    fix: env values are strings (quote numbers: "1") or { secret = true }\n'
        "profiles/broken.toml:1:7: error toml-syntax invalid TOML: Expected ']' at the end of a table declaration\n"
        "    fix: fix the TOML syntax at that position\n"
        "5 errors, 0 warnings\n"
    ).replace("good  \n", "good\n")


def test_stack_commands_read_only_their_layers(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"good.toml": "[serve]\nmodel = 'm'\n", "broken.toml": "[serve\n"})
    assert run("--repo", root, "show", "good").code == 0
    assert run("--repo", root, "show", "broken").code == 1


def test_show_json_contract(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "show", "qwen-disaggregated", "--format", "json", "--role", "proxy")
    assert result.code == 0
    assert json.loads(result.out) == {
        "stack": "qwen-disaggregated",
        "layers": ["base", "models/qwen3-0.6b", "disaggregated", "qwen-disaggregated"],
        "roles": {
            "proxy": {
                "command": [
                    "vllm-router",
                    "--policy",
                    "round_robin",
                    "--vllm-pd-disaggregation",
                    "--prefill",
                    "http://127.0.0.1:8100",
                    "--decode",
                    "http://127.0.0.1:8200",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "8192",
                ],
                "env": {},
            }
        },
    }
    serve = json.loads(run("--repo", REPO_ROOT, "show", "nemotron-replayssm", "--format", "json").out)
    assert serve["roles"]["serve"]["env"]["HF_TOKEN"] == {"secret": True}
    assert serve["roles"]["serve"]["serve"]["max_num_seqs"] == 64


def test_show_toml_is_valid_toml(run: Run) -> None:
    import tomllib

    result = run("--repo", REPO_ROOT, "show", "nemotron-replayssm")
    assert result.code == 0
    data = tomllib.loads(result.out)
    assert data["roles"]["serve"]["serve"]["use_replayssm"] is True


def test_explain_json_contract(run: Run) -> None:
    result = run(
        "--repo", REPO_ROOT, "explain", "qwen-disaggregated", "serve.port", "--format", "json", "--role", "prefill"
    )
    assert result.code == 0
    assert json.loads(result.out) == {
        "stack": "qwen-disaggregated",
        "entries": [
            {
                "role": "prefill",
                "key": "serve.port",
                "value": 8100,
                "origin": {
                    "file": "profiles/disaggregated.toml",
                    "line": 16,
                    "column": 1,
                    "key": "roles.prefill.serve.port",
                    "layer": "disaggregated",
                },
                "overridden": [
                    {
                        "value": 8000,
                        "origin": {
                            "file": "profiles/base.toml",
                            "line": 7,
                            "column": 1,
                            "key": "serve.port",
                            "layer": "base",
                        },
                    }
                ],
            }
        ],
    }


def test_explain_json_value_per_leaf_of_a_json_option(run: Run) -> None:
    result = run(
        "--repo",
        REPO_ROOT,
        "explain",
        "qwen-disaggregated",
        "serve.kv_transfer_config",
        "--format",
        "json",
        "--role",
        "decode",
    )
    keys = [e["key"] for e in json.loads(result.out)["entries"]]
    assert keys == [
        "serve.kv_transfer_config.kv_connector",
        "serve.kv_transfer_config.kv_load_failure_policy",
        "serve.kv_transfer_config.kv_role",
    ]


def test_explain_text_for_the_readme_example(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "explain", "nemotron-replayssm", "serve.max_num_seqs")
    assert result.code == 0
    assert result.out == (
        "[serve] serve.max_num_seqs = 64\n"
        "    set at profiles/nemotron-replayssm.toml:6:1  (serve.max_num_seqs, layer nemotron-replayssm)\n"
        "    overrides 256 from profiles/base.toml:9:1  (serve.max_num_seqs, layer base)\n"
    )


def test_no_repository_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("list", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        f"profilekit: error: no profile repository found: no profilekit.toml in {tmp_path.resolve()} "
        "or any parent folder\n"
        "  hint: run inside a profile repository, pass --repo PATH, or create profilekit.toml at the root of one\n"
    )


def test_repo_is_found_from_a_subfolder(run: Run) -> None:
    result = run("show", "qwen-offload", "--format", "json", cwd=REPO_ROOT / "profiles" / "models")
    assert result.code == 0
    assert json.loads(result.out)["roles"]["serve"]["serve"]["kv_offloading_size"] == 16


def test_unsupported_vllm_version_names_supported_ones(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "--vllm-version", "0.26.0", "show", "qwen-offload")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unsupported vLLM version '0.26.0' (from --vllm-version)\n"
        "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0\n"
    )


def test_unknown_role_suggests(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "show", "qwen-disaggregated", "--role", "prefil")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: stack 'qwen-disaggregated' has no role 'prefil'\n  hint: did you mean 'prefill'?\n"
    )


def test_bad_option_is_exit_2(run: Run) -> None:
    assert run("--repo", REPO_ROOT, "show", "qwen-offload", "--bogus").code == 2
    assert run("--repo", REPO_ROOT, "show", "qwen-offload", "--format", "yaml").code == 2


def test_console_script_and_module_entry_points() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for cmd in (
        [sys.executable, "-m", "profilekit", "--version"],
        [str(Path(sys.executable).parent / "profilekit"), "--version"],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "profilekit 0.1.0\n"
    proc = subprocess.run(
        [sys.executable, "-m", "profilekit", "--repo", str(REPO_ROOT), "show", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_render_default_out_is_under_build(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"site/x.toml": "[serve]\nmodel = 'm'\n"})
    result = run("--repo", root, "render", "site/x", cwd=root)
    assert result.code == 0, result
    assert result.out == "build/site_x/serve.sh\nbuild/site_x/serve.env\nbuild/site_x/manifest.json\n"


def test_team_templates_replace_builtin_ones(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "app.toml": "[serve]\nmodel = 'm x'\n",
            "team-templates/launch.sh.j2": '#!/usr/bin/env bash\n# team {{ role }}\nexec {{ command }} "$@"\n',
        },
        config='[render]\ntemplates = "team-templates"\n',
    )
    result = run("--repo", root, "render", "app", "--print")
    assert result.code == 0, result
    assert result.out == "#!/usr/bin/env bash\n# team serve\nexec vllm serve 'm x' \"$@\"\n"


def test_template_with_undefined_name_is_not_a_traceback(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {"app.toml": "[serve]\nmodel = 'm'\n", "team-templates/launch.sh.j2": "{{ nope }}\n"},
        config='[render]\ntemplates = "team-templates"\n',
    )
    result = run("--repo", root, "render", "app", "--print")
    assert result.code == 1, result
    assert result.out == (
        "team-templates/launch.sh.j2:1:1: error template-error template team-templates/launch.sh.j2 failed at line 1: "
        "'nope' is undefined\n"
        "    fix: fix the template; templates can use: command, exports, layers, profilekit_version, role, script_name, "
        "secrets, stack, vllm_version\n"
        "1 error, 0 warnings\n"
    )


def test_each_command_is_registered_by_the_module_a_run_imports_for_it() -> None:
    """`cli.COMMANDS` (a run imports only its command's module) is what the modules register, command by command."""
    code = (
        "from profilekit.cli.run import command_name, typer_app\n"
        "for c in typer_app().registered_commands:\n"
        "    print(command_name(c), c.callback.__module__.rsplit('.', 1)[1])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from profilekit.cli.run import COMMANDS

    assert dict(line.split() for line in done.stdout.splitlines()) == COMMANDS


def test_an_unknown_command_still_gets_a_did_you_mean_from_every_command(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "chek", "x")
    assert result.code == 2
    assert "Error: No such command 'chek'. Did you mean 'check', 'schema'?" in result.err
