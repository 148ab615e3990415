"""References between values (issue 13 item 2): `${serve.KEY}`, `${roles.R.serve.KEY}`, `${env.NAME}`, `${model.KEY}`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_render import launch

PROXY_ARGV = [
    "--policy",
    "round_robin",
    "--vllm-pd-disaggregation",
    "--prefill",
    "http://127.0.0.1:9100",
    "--decode",
    "http://127.0.0.1:8200",
    "--host",
    "127.0.0.1",
    "--port",
    "8192",
]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """This project's example profile repository, with a site layer that moves the prefill port."""
    root = tmp_path / "example"
    shutil.copytree(REPO_ROOT / "profiles", root / "profiles")
    shutil.copy(REPO_ROOT / "profilekit.toml", root / "profilekit.toml")
    (root / "profiles" / "site" / "ports.toml").write_text(
        "[layer]\nabstract = true\n\n[roles.prefill.serve]\nport = 9100\n", encoding="utf-8"
    )
    return root


def test_proxy_follows_a_port_a_site_layer_changes(example: Path, run: Run, stub_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("--repo", example, "render", "qwen-disaggregated+site/ports", "--out", out)
    assert result.code == 0, result

    proc, rec = launch(out / "proxy.sh", stub_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    assert rec["argv"][1:] == PROXY_ARGV  # type: ignore[index]
    proc, rec = launch(out / "prefill.sh", stub_bin, tmp_path, env={"HF_TOKEN": "x"})
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    argv = rec["argv"]
    assert isinstance(argv, list)
    assert argv[argv.index("--port") + 1] == "9100"


def test_example_proxy_without_the_site_layer(example: Path, run: Run) -> None:
    result = run("--repo", example, "show", "qwen-disaggregated", "--role", "proxy", "--format", "json")
    assert result.code == 0, result
    command = json.loads(result.out)["roles"]["proxy"]["command"]
    assert command[4:8] == ["--prefill", "http://127.0.0.1:8100", "--decode", "http://127.0.0.1:8200"]


def test_explain_shows_the_resolved_value_and_its_parts(example: Path, run: Run) -> None:
    result = run("--repo", example, "explain", "qwen-disaggregated+site/ports", "roles.proxy.command")
    assert result.code == 0, result
    assert result.out == (
        '[proxy] command = ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation", "--prefill", '
        '"http://127.0.0.1:9100", "--decode", "http://127.0.0.1:8200", "--host", "127.0.0.1", "--port", "8192"]\n'
        "    set at profiles/disaggregated.toml:36:1  (roles.proxy.command, layer disaggregated)\n"
        '    written as ["vllm-router", "--policy", "round_robin", "--vllm-pd-disaggregation", "--prefill", '
        '"http://127.0.0.1:${roles.prefill.serve.port}", "--decode", "http://127.0.0.1:${roles.decode.serve.port}", '
        '"--host", "127.0.0.1", "--port", "8192"]\n'
        "    ${roles.prefill.serve.port} = 9100 from profiles/site/ports.toml:5:1  "
        "(roles.prefill.serve.port, layer site/ports)\n"
        "    ${roles.decode.serve.port} = 8200 from profiles/disaggregated.toml:27:1  "
        "(roles.decode.serve.port, layer disaggregated)\n"
    )


def test_explain_json_carries_the_written_value_and_the_references(example: Path, run: Run) -> None:
    result = run(
        "--repo", example, "explain", "qwen-disaggregated+site/ports", "roles.proxy.command", "--format", "json"
    )
    assert result.code == 0, result
    (entry,) = json.loads(result.out)["entries"]
    assert entry["written"][5] == "http://127.0.0.1:${roles.prefill.serve.port}"
    assert entry["references"] == [
        {
            "reference": "${roles.prefill.serve.port}",
            "role": "prefill",
            "key": "serve.port",
            "value": 9100,
            "origin": {
                "file": "profiles/site/ports.toml",
                "line": 5,
                "column": 1,
                "key": "roles.prefill.serve.port",
                "layer": "site/ports",
            },
        },
        {
            "reference": "${roles.decode.serve.port}",
            "role": "decode",
            "key": "serve.port",
            "value": 8200,
            "origin": {
                "file": "profiles/disaggregated.toml",
                "line": 27,
                "column": 1,
                "key": "roles.decode.serve.port",
                "layer": "disaggregated",
            },
        },
    ]


SERVE = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\nport = 8100\n'


def _check(make_repo: MakeRepo, run: Run, text: str) -> tuple[int, str]:
    repo = make_repo({"a.toml": text})
    result = run("--repo", repo, "check", "a")
    return result.code, result.out


def test_env_and_serve_strings_resolve_and_bash_reproduces_them(
    make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "a.toml": SERVE
            + 'served_model_name = ["${serve.model}", "qwen-${serve.port}"]\n'
            + 'chat_template = "{{ $${not_a_reference} }} $$ ${env.GREETING}"\n'
            + 'max_num_seqs = "${serve.max_num_batched_tokens}"\nmax_num_batched_tokens = 4096\n'
            + '[env]\nGREETING = "hello"\nLISTEN = "http://localhost:${serve.port}/v1"\n'
        }
    )
    assert run("--repo", repo, "check", "a").out == "a: no problems found (vLLM 0.33.0)\n"
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "a", "--out", out)
    assert result.code == 0, result
    proc, rec = launch(out / "serve.sh", stub_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    assert rec["argv"][1:] == [  # type: ignore[index]
        "serve",
        "Qwen/Qwen3-0.6B",
        "--port",
        "8100",
        "--served-model-name",
        "Qwen/Qwen3-0.6B",
        "qwen-8100",
        "--chat-template",
        "{{ ${not_a_reference} }} $$ hello",
        "--max-num-seqs",
        "4096",
        "--max-num-batched-tokens",
        "4096",
    ]
    env = rec["env"]
    assert isinstance(env, dict)
    assert env["LISTEN"] == "http://localhost:8100/v1"


def test_a_whole_reference_in_serve_keeps_the_type(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({"a.toml": SERVE + 'max_num_seqs = "${serve.port}"\n'})
    result = run("--repo", repo, "show", "a", "--format", "json")
    assert result.code == 0, result
    assert json.loads(result.out)["roles"]["serve"]["serve"]["max_num_seqs"] == 8100


def test_a_resolved_value_vllm_refuses_is_judged_where_it_is_written(make_repo: MakeRepo, run: Run) -> None:
    code, out = _check(make_repo, run, SERVE + 'max_num_seqs = "${env.SEQS}"\n[env]\nSEQS = "many"\n')
    assert code == 1
    assert out == (
        "profiles/a.toml:4:1: error invalid-value serve.max_num_seqs: expected an integer, got a string\n"
        "    in stack a, role serve\n"
        "    fix: write max_num_seqs = 1\n"
        "1 error, 0 warnings\n"
    )


def test_rules_see_resolved_values(make_repo: MakeRepo, run: Run) -> None:
    text = (
        SERVE
        + '[roles.prefill.serve]\nport = 8100\n[roles.decode.serve]\nport = "${roles.prefill.serve.port}"\n\n[roles.decode]\nkind = "vllm"\n\n[roles.prefill]\nkind = "vllm"\n'
    )
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out.splitlines()[0] == (
        "profiles/a.toml:5:1: error host-port-shared roles prefill and decode run on one host and bind TCP port "
        "8100 (prefill serve.port = 8100, decode serve.port = 8100); all but the first to start fail with "
        '"[Errno 98] Address already in use"'
    )


def test_unknown_reference_with_did_you_mean(make_repo: MakeRepo, run: Run) -> None:
    code, out = _check(make_repo, run, SERVE + '[env]\nURL = "http://localhost:${serve.prot}"\n')
    assert code == 1
    assert out == (
        "profiles/a.toml:5:1: error unknown-reference env.URL: ${serve.prot} names nothing: no layer of the stack "
        "sets serve.prot\n"
        "    fix: did you mean ${serve.port}?\n"
        "1 error, 0 warnings\n"
    )


def test_unknown_role_and_a_command_role_reference(make_repo: MakeRepo, run: Run) -> None:
    text = (
        SERVE
        + '[roles.prefill.serve]\nport = 8100\n[roles.proxy]\nkind = "command"\ncommand = ["router", "${roles.prefil.serve.port}", '
        '"${serve.port}"]\n\n[roles.prefill]\nkind = "vllm"\n'
    )
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out == (
        "profiles/a.toml:8:22: error unknown-reference roles.proxy.command[1]: ${roles.prefil.serve.port} names "
        "nothing: the stack has no role 'prefil' (its roles: prefill, proxy)\n"
        "    fix: did you mean ${roles.prefill.serve.port}?\n"
        "profiles/a.toml:8:52: error unknown-reference roles.proxy.command[2]: ${serve.port} names nothing: role "
        "'proxy' runs a command and has no serve values\n"
        "    fix: did you mean ${roles.prefill.serve.port}?\n"
        "2 errors, 0 warnings\n"
    )


def test_a_shell_variable_is_not_a_reference(make_repo: MakeRepo, run: Run) -> None:
    code, out = _check(make_repo, run, SERVE + '[env]\nCACHE = "${HOME}/cache"\n')
    assert code == 1
    assert out == (
        "profiles/a.toml:5:1: error unknown-reference env.CACHE: ${HOME} names nothing: a reference names "
        "serve.KEY, env.NAME, model.KEY or roles.ROLE.serve.KEY\n"
        "    fix: write $${HOME} for the literal text ${HOME}\n"
        "1 error, 0 warnings\n"
    )


def test_model_name_points_at_serve_model(make_repo: MakeRepo, run: Run) -> None:
    code, out = _check(make_repo, run, SERVE + 'served_model_name = ["${model.name}"]\n')
    assert code == 1
    assert out == (
        "profiles/a.toml:4:22: error unknown-reference serve.served_model_name[0]: ${model.name} names nothing: no "
        "layer of the stack sets model.name\n"
        "    fix: the model's name is serve.model: write ${serve.model}\n"
        "1 error, 0 warnings\n"
    )


def test_model_facts_can_be_referenced(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo(
        {"a.toml": SERVE + '[model]\narchitecture = "Qwen3ForCausalLM"\n[env]\nARCH = "${model.architecture}"\n'}
    )
    result = run("--repo", repo, "show", "a", "--format", "json")
    assert result.code == 0, result
    assert json.loads(result.out)["roles"]["serve"]["env"]["ARCH"] == "Qwen3ForCausalLM"


def test_reference_cycle_names_the_cycle(make_repo: MakeRepo, run: Run) -> None:
    text = (
        SERVE + 'max_num_seqs = "${serve.max_num_batched_tokens}"\nmax_num_batched_tokens = "${serve.max_num_seqs}"\n'
    )
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out == (
        "profiles/a.toml:4:1: error reference-cycle references form a cycle: serve.max_num_seqs -> "
        "serve.max_num_batched_tokens -> serve.max_num_seqs\n"
        "    profiles/a.toml:5:1: serve.max_num_batched_tokens (layer a)\n"
        "    fix: write a value instead of one of these references\n"
        "1 error, 0 warnings\n"
    )


def test_a_cycle_across_roles(make_repo: MakeRepo, run: Run) -> None:
    text = (
        SERVE + '[roles.p.serve]\nmax_num_seqs = "${roles.d.serve.max_num_seqs}"\n'
        '[roles.d.serve]\nmax_num_seqs = "${roles.p.serve.max_num_seqs}"\n\n[roles.d]\nkind = "vllm"\n\n[roles.p]\nkind = "vllm"\n'
    )
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out.splitlines()[0] == (
        "profiles/a.toml:5:1: error reference-cycle references form a cycle: roles.p.serve.max_num_seqs -> "
        "roles.d.serve.max_num_seqs -> roles.p.serve.max_num_seqs"
    )


def test_a_secret_is_never_resolved_into_argv(make_repo: MakeRepo, run: Run) -> None:
    text = SERVE + 'api_key = ["${env.API_KEY}"]\n[env]\nAPI_KEY = { secret = true }\n'
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out == (
        "profiles/a.toml:4:12: error secret-reference-in-argv serve.api_key[0]: ${env.API_KEY} names a secret; "
        "resolving it would put the secret's value on the command line, where every user of the host can read it "
        "(ps, /proc)\n"
        "    fix: let the process read API_KEY from its environment (the rendered script exports it), or pass a file "
        "that holds it\n"
        "1 error, 0 warnings\n"
    )


def test_a_secret_is_never_resolved_into_a_command(make_repo: MakeRepo, run: Run) -> None:
    text = (
        SERVE
        + '[env]\nHF_TOKEN = { secret = true }\n[roles.proxy]\nkind = "command"\ncommand = ["router", "--token=${env.HF_TOKEN}"]\n'
        "[roles.proxy.env]\nHF_TOKEN = { secret = true }\n"
    )
    code, out = _check(make_repo, run, text)
    assert code == 1
    assert out.splitlines()[0] == (
        "profiles/a.toml:8:22: error secret-reference-in-argv roles.proxy.command[1]: ${env.HF_TOKEN} names a "
        "secret; resolving it would put the secret's value on the command line, where every user of the host can "
        "read it (ps, /proc)"
    )


def test_a_secret_is_never_resolved_into_an_env_file(make_repo: MakeRepo, run: Run) -> None:
    code, out = _check(make_repo, run, SERVE + '[env]\nHF_TOKEN = { secret = true }\nCOPY = "${env.HF_TOKEN}"\n')
    assert code == 1
    assert out == (
        "profiles/a.toml:6:1: error secret-reference-in-env env.COPY: ${env.HF_TOKEN} names a secret; resolving it "
        "would write the secret's value into the rendered env file and script\n"
        "    fix: declare this variable a secret too ({ secret = true }), or let the process read HF_TOKEN itself\n"
        "1 error, 0 warnings\n"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            'chat_template = "${serve.port"',
            "profiles/a.toml:4:1: error invalid-reference serve.chat_template: '${serve.port' has no closing '}'\n"
            "    fix: close the reference, or write $${ for a literal ${\n",
        ),
        (
            'chat_template = "x ${serve.kv_transfer_config}"\n'
            'kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_both" }',
            "profiles/a.toml:4:1: error invalid-reference serve.chat_template: ${serve.kv_transfer_config} names a "
            "table; a reference names one value\n"
            "    fix: reference one of its keys: ${serve.kv_transfer_config.kv_connector}, "
            "${serve.kv_transfer_config.kv_role}\n",
        ),
        (
            'chat_template = "names: ${serve.served_model_name}"\nserved_model_name = ["a", "b"]',
            "profiles/a.toml:4:1: error invalid-reference serve.chat_template: ${serve.served_model_name} names an "
            "array; only a string, number or boolean can be written into a string\n"
            '    fix: write the whole value as "${serve.served_model_name}"\n',
        ),
    ],
)
def test_invalid_references(make_repo: MakeRepo, run: Run, line: str, expected: str) -> None:
    code, out = _check(make_repo, run, SERVE + line + "\n")
    assert code == 1
    assert out == expected + "1 error, 0 warnings\n"


def test_show_with_a_broken_reference_exits_1_and_names_it(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({"a.toml": SERVE + '[env]\nURL = "${serve.prot}"\n'})
    result = run("--repo", repo, "show", "a")
    assert result.code == 1
    assert (
        "profiles/a.toml:5:1: error unknown-reference env.URL: ${serve.prot} names nothing" in result.out + result.err
    )


def test_import_writes_a_literal_dollar_brace_escaped(
    make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path
) -> None:
    repo = make_repo({})
    result = run(
        "--repo", repo, "import", "--name", "imp", "--", "vllm", "serve", "Qwen/Qwen3-0.6B", "--chat-template", "${x} y"
    )
    assert result.code == 0, result
    assert 'chat_template = "$${x} y"\n' in (repo / "profiles" / "imp.toml").read_text(encoding="utf-8")
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "imp", "--out", out).code == 0
    proc, rec = launch(out / "serve.sh", stub_bin, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    assert rec["argv"][1:] == ["serve", "Qwen/Qwen3-0.6B", "--chat-template", "${x} y"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "${}",
            "error invalid-reference env.X: ${} is not a reference: a reference is ${serve.KEY}, ${env.NAME}, "
            "${model.KEY} or ${roles.ROLE.serve.KEY}\n    fix: write $${ for a literal ${\n",
        ),
        (
            "${model}",
            "error unknown-reference env.X: ${model} names nothing: a reference names serve.KEY, env.NAME, "
            "model.KEY or roles.ROLE.serve.KEY\n    fix: write $${ for a literal ${\n",
        ),
        (
            "${roles.serve}",
            "error unknown-reference env.X: ${roles.serve} names nothing: a reference names serve.KEY, env.NAME, "
            "model.KEY or roles.ROLE.serve.KEY\n"
            "    fix: a value of another role is roles.ROLE.serve.KEY, roles.ROLE.env.NAME or roles.ROLE.model.KEY\n",
        ),
    ],
)
def test_references_that_name_no_value(make_repo: MakeRepo, run: Run, value: str, expected: str) -> None:
    code, out = _check(make_repo, run, SERVE + f'[env]\nX = "{value}"\n')
    assert code == 1
    assert out == "profiles/a.toml:5:1: " + expected + "1 error, 0 warnings\n"


def test_literal_dollar_brace_and_a_self_reference(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({"a.toml": SERVE + '[env]\nB = "$${env.A} $$ $"\nC = "${env.B}"\n'})
    result = run("--repo", repo, "show", "a", "--format", "json")
    assert result.code == 0, result
    assert json.loads(result.out)["roles"]["serve"]["env"] == {"B": "${env.A} $$ $", "C": "${env.A} $$ $"}
    code, out = _check(make_repo, run, SERVE + '[env]\nA = "x${env.A}"\n')
    assert (code, out) == (
        1,
        "profiles/a.toml:5:1: error reference-cycle references form a cycle: env.A -> env.A\n"
        "    fix: write a value instead of one of these references\n"
        "1 error, 0 warnings\n",
    )
