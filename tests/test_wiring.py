"""Issue 25, item 2: every address a role uses to reach another must name a port some role listens on.

The newcomer cases run on a copy of this project's example repository (profiles/disaggregated.toml's router),
with the exact command a user runs and the exact message it gets; the other forms on small repositories.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run

LISTENING = (
    "5600 role prefill (NIXL side channel); 5601 role decode (NIXL side channel); 8100 role prefill (HTTP); "
    "8192 role proxy (HTTP); 8200 role decode (HTTP)"
)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "example"
    shutil.copytree(REPO_ROOT / "profiles", root / "profiles")
    shutil.copy(REPO_ROOT / "profilekit.toml", root / "profilekit.toml")
    return root


def _route_decode_to(example: Path, target: str) -> None:
    path = example / "profiles" / "disaggregated.toml"
    text = path.read_text(encoding="utf-8")
    assert '"--decode", "http://127.0.0.1:${roles.decode.serve.port}",' in text
    path.write_text(text.replace("${roles.decode.serve.port}", target, 1), encoding="utf-8")


def test_a_decode_endpoint_where_nothing_listens_is_an_error(example: Path, run: Run) -> None:
    _route_decode_to(example, "9999")
    result = run("check", "qwen-disaggregated", cwd=example)
    assert (result.code, result.out) == (
        1,
        "profiles/disaggregated.toml:39:15: error dangling-endpoint role proxy reaches its decode endpoint --decode "
        f"http://127.0.0.1:9999, but nothing of the stack listens on port 9999 (listening: {LISTENING})\n"
        "    in stack qwen-disaggregated, role proxy\n"
        "    fix: write the port of the role it is meant for as a reference, such as ${roles.decode.serve.port}\n"
        "1 error, 0 warnings\n",
    )


def test_a_decode_endpoint_at_the_prefill_instance_is_an_error(example: Path, run: Run) -> None:
    _route_decode_to(example, "${roles.prefill.serve.port}")
    result = run("check", "qwen-disaggregated", cwd=example)
    assert (result.code, result.out) == (
        1,
        "profiles/disaggregated.toml:39:15: error endpoint-role-mismatch role proxy sends its decode requests to "
        "--decode http://127.0.0.1:8100, which is role prefill (HTTP), not a role that decodes\n"
        "    in stack qwen-disaggregated, role proxy\n"
        "    profiles/disaggregated.toml:16:1: roles.prefill.serve.port (layer disaggregated)\n"
        "    fix: point it at the role that decodes: ${roles.decode.serve.port}\n"
        "1 error, 0 warnings\n",
    )


def test_a_locked_router_meeting_a_local_port_move_is_caught(example: Path, run: Run) -> None:
    """The issue's shipped-broken case: the router names a literal port; a site layer moves the decode port."""
    _route_decode_to(example, "8200")
    (example / "profiles" / "site" / "ports.toml").write_text(
        "[layer]\nabstract = true\n\n[roles.decode.serve]\nport = 8300\n", encoding="utf-8"
    )
    assert run("check", "qwen-disaggregated", cwd=example).code == 0
    result = run("check", "qwen-disaggregated+site/ports", cwd=example)
    assert result.code == 1
    assert "error dangling-endpoint role proxy reaches its decode endpoint --decode http://127.0.0.1:8200" in result.out


PD = """[serve]
model = "Qwen/Qwen3-0.6B"

[roles.prefill]
kind = "vllm"

[roles.prefill.serve]
port = 8100
kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer" }

[roles.prefill.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "5600"

[roles.decode]
kind = "vllm"

[roles.decode.serve]
port = 8200
kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_consumer" }

[roles.decode.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "5601"

[roles.proxy]
kind = "command"
"""


def _proxy(make_repo: MakeRepo, command: str, *, env: str = "", config: str = "") -> Path:
    text = PD + f"command = {command}\n" + (f"\n[roles.proxy.env]\n{env}\n" if env else "")
    return make_repo({"pd.toml": text}, config='[vllm]\nversion = "0.33.0"\n' + config)


def test_vllms_proxy_style_host_and_port_arguments_are_checked(make_repo: MakeRepo, run: Run) -> None:
    command = (
        '["python3", "toy_proxy_server.py", "--port", "8192", "--prefiller-host", "127.0.0.1", "--prefiller-port", '
        '"8100", "--decoder-host", "localhost", "--decoder-port", "8201"]'
    )
    result = run("check", "pd", cwd=_proxy(make_repo, command))
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[0] == (
        "profiles/pd.toml:26:174: error dangling-endpoint role proxy reaches its decode endpoint --decoder-host "
        "localhost --decoder-port 8201, but nothing of the stack listens on port 8201 (listening: 5600 role prefill "
        "(NIXL side channel); 5601 role decode (NIXL side channel); 8100 role prefill (HTTP); 8192 role proxy "
        "(HTTP); 8200 role decode (HTTP))"
    )
    assert lines[-1] == "1 error, 0 warnings"
    fixed = command.replace('"8201"', '"${roles.decode.serve.port}"')
    assert run("check", "pd", cwd=_proxy(make_repo, fixed)).out == "pd: no problems found (vLLM 0.33.0)\n"


def test_plural_host_and_port_lists_pair_in_order(make_repo: MakeRepo, run: Run) -> None:
    command = (
        '["python3", "proxy.py", "--prefiller-hosts", "127.0.0.1", "127.0.0.1", "--prefiller-ports", "8100", '
        '"8200", "--decoder-hosts", "127.0.0.1", "--decoder-ports", "8200"]'
    )
    result = run("check", "pd", cwd=_proxy(make_repo, command))
    assert result.code == 1
    assert (
        "error endpoint-role-mismatch role proxy sends its prefill requests to --prefiller-hosts 127.0.0.1 "
        "--prefiller-ports 8200, which is role decode (HTTP), not a role that prefills"
    ) in result.out
    assert result.out.count("error ") == 1


def test_an_unknown_loopback_address_is_a_warning_until_the_service_is_declared(make_repo: MakeRepo, run: Run) -> None:
    command = (
        '["vllm-router", "--port", "8192", "--prefill", "http://127.0.0.1:8100", "--decode", "http://127.0.0.1:8200"]'
    )
    env = 'MOONCAKE_MASTER = "127.0.0.1:50051"'
    result = run("check", "pd", cwd=_proxy(make_repo, command, env=env))
    assert (result.code, result.out) == (
        0,
        "profiles/pd.toml:29:1: warning dangling-endpoint role proxy reaches an address MOONCAKE_MASTER=127.0.0.1:50051, "
        "but nothing of the stack listens on port 50051 (listening: 5600 role prefill (NIXL side channel); 5601 role "
        "decode (NIXL side channel); 8100 role prefill (HTTP); 8192 role proxy (HTTP); 8200 role decode (HTTP))\n"
        "    in stack pd, role proxy\n"
        "    fix: write the port of the role it is meant for as a reference (${roles.NAME.serve.port}), or name the "
        "local service in profilekit.toml: [services] NAME = 50051\n"
        "0 errors, 1 warning\n",
    )
    declared = _proxy(make_repo, command, env=env, config="\n[services]\nmooncake-master = 50051\n")
    assert run("check", "pd", cwd=declared).out == "pd: no problems found (vLLM 0.33.0)\n"


def test_a_service_entry_must_be_a_port(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {"a.toml": '[serve]\nmodel = "m"\n'}, config='[vllm]\nversion = "0.33.0"\n[services]\nredis = "6379"\n'
    )
    result = run("check", "a", cwd=root)
    assert (result.code, result.out, result.err) == (
        1,
        "",
        "profilekit.toml:4:1: error invalid-config services.redis: expected an integer, got a string\n1 error, 0 warnings\n",
    )


def test_the_example_repository_is_wired(example: Path, run: Run) -> None:
    result = run("lint", "--strict", cwd=example)
    assert result.code == 0, result


def test_an_env_variable_named_for_decode_is_an_endpoint_with_a_meaning(make_repo: MakeRepo, run: Run) -> None:
    command = (
        '["vllm-router", "--port", "8192", "--prefill", "http://127.0.0.1:8100", "--decode", "http://127.0.0.1:8200"]'
    )
    result = run("check", "pd", cwd=_proxy(make_repo, command, env='DECODE_URL = "http://localhost:8100/v1"'))
    assert result.code == 1
    assert (
        "error endpoint-role-mismatch role proxy sends its decode requests to DECODE_URL=http://localhost:8100/v1, "
        "which is role prefill (HTTP), not a role that decodes"
    ) in result.out


def test_a_role_without_a_kv_connector_is_not_judged_by_its_kv_role(make_repo: MakeRepo, run: Run) -> None:
    """Two plain vLLM servers behind a router: no kv_role to fit, so no endpoint-role-mismatch (a false reject)."""
    text = PD.replace('kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer" }\n', "")
    text = text.replace('kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_consumer" }\n', "")
    command = (
        '["vllm-router", "--port", "8192", "--prefill", "http://127.0.0.1:8200", "--decode", "http://127.0.0.1:8100"]'
    )
    root = make_repo({"pd.toml": text + f"command = {command}\n"}, config='[vllm]\nversion = "0.33.0"\n')
    assert "endpoint-role-mismatch" not in run("check", "pd", cwd=root).out
