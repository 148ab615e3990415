"""One host, one resource: TCP ports and GPUs that roles of one stack would share (rules/host.py)."""

from __future__ import annotations

import pytest

from tests.conftest import MakeRepo, Run
from tests.rules.conftest import Check, messages
from tests.rules.layers import RELEASES

MODEL = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'


def two_roles(*, prefill: str = "", decode: str = "", prefill_env: str = "", decode_env: str = "") -> str:
    return f"""{MODEL}
[roles.prefill.serve]
kv_transfer_config = {{ kv_connector = "NixlConnector", kv_role = "kv_producer" }}
{prefill}
[roles.prefill.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "5600"
{prefill_env}
[roles.decode.serve]
kv_transfer_config = {{ kv_connector = "NixlConnector", kv_role = "kv_consumer" }}
{decode}
[roles.decode.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "5601"
{decode_env}

[roles.decode]
kind = "vllm"

[roles.prefill]
kind = "vllm"
"""


# ---- host-port-shared ------------------------------------------------------------------------------------


def test_same_http_port_on_one_host_is_refused(check: Check) -> None:
    found = check({"s.toml": two_roles(prefill="port = 8100", decode="port = 8100")}, rule="host-port-shared")
    assert messages(found) == [
        "roles prefill and decode run on one host and bind TCP port 8100 (prefill serve.port = 8100, decode "
        'serve.port = 8100); all but the first to start fail with "[Errno 98] Address already in use"'
    ]
    assert [str(loc) + " " + loc.key for loc in found[0].locations] == [
        "profiles/s.toml:6:1 roles.prefill.serve.port",
        "profiles/s.toml:12:1 roles.decode.serve.port",
    ]
    assert found[0].fix == "set serve.port = 8101 on decode: every process on a host needs its own ports"


def test_distinct_http_ports_pass(check: Check) -> None:
    assert check({"s.toml": two_roles(prefill="port = 8100", decode="port = 8200")}) == []


def test_vllm_default_port_counts_and_names_the_role(check: Check) -> None:
    found = check({"s.toml": two_roles()}, rule="host-port-shared")
    assert messages(found) == [
        "roles prefill and decode run on one host and bind TCP port 8000 (prefill serve.port = 8000 (vLLM default), "
        'decode serve.port = 8000 (vLLM default)); all but the first to start fail with "[Errno 98] Address already '
        'in use"'
    ]
    assert [loc.key for loc in found[0].locations] == ["roles.prefill", "roles.decode"]


def test_command_port_and_side_channel_count_too(check: Check) -> None:
    text = two_roles(prefill="port = 5601", decode="port = 8200") + (
        '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router", "--port=8200"]\n'
    )
    found = check({"s.toml": text}, rule="host-port-shared")
    assert messages(found) == [
        "roles prefill and decode run on one host and bind TCP port 5601 (prefill serve.port = 5601, decode NIXL "
        'side channel 5601); all but the first to start fail with "[Errno 98] Address already in use"',
        "roles decode and proxy run on one host and bind TCP port 8200 (decode serve.port = 8200, proxy --port 8200 "
        'in its command); all but the first to start fail with "[Errno 98] Address already in use"',
    ]
    assert found[0].fix == (
        'set VLLM_NIXL_SIDE_CHANNEL_PORT = "8201" on decode: every process on a host needs its own ports'
    )
    assert found[1].fix == "change --port in the command of proxy to 8202: every process on a host needs its own ports"


def test_one_role_binding_its_own_side_channel_port(check: Check) -> None:
    found = check({"s.toml": two_roles(prefill="port = 5600", decode="port = 8200")}, rule="host-port-shared")
    assert messages(found) == [
        "role prefill binds TCP port 5600 twice (prefill serve.port = 5600, prefill NIXL side channel 5600); all but "
        'the first to start fail with "[Errno 98] Address already in use"'
    ]


def test_roles_on_named_hosts_or_addresses_do_not_clash(check: Check) -> None:
    hosts = two_roles(
        prefill_env='VLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.1"', decode_env='VLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.2"'
    )
    assert check({"s.toml": hosts}, rule="host-port-shared") == []
    addresses = two_roles(prefill='host = "127.0.0.1"\nport = 8100', decode='host = "10.1.2.3"\nport = 8100')
    assert check({"s.toml": addresses}, rule="host-port-shared") == []
    wildcard = two_roles(prefill='host = "0.0.0.0"\nport = 8100', decode='host = "10.1.2.3"\nport = 8100')
    assert len(check({"s.toml": wildcard}, rule="host-port-shared")) == 1


def test_unix_socket_binds_no_port(check: Check) -> None:
    text = two_roles(prefill='uds = "/run/prefill.sock"')
    assert check({"s.toml": text}, rule="host-port-shared") == []


def test_single_role_stack_is_never_a_clash(check: Check) -> None:
    assert check({"s.toml": MODEL}, rule="host-port-shared") == []


# ---- host-gpu-shared -------------------------------------------------------------------------------------


def gpus(prefill_gpus: str, decode_gpus: str, *, prefill: str = "", decode: str = "") -> str:
    return two_roles(
        prefill="port = 8100\n" + prefill,
        decode="port = 8200\n" + decode,
        prefill_env=f'CUDA_VISIBLE_DEVICES = "{prefill_gpus}"',
        decode_env=f'CUDA_VISIBLE_DEVICES = "{decode_gpus}"',
    )


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_same_gpu_on_one_host_is_refused(check: Check, version: str) -> None:
    found = check({"s.toml": gpus("0", "0")}, version=version)
    assert messages(found) == [
        'roles prefill and decode run on one host and share GPU 0 (CUDA_VISIBLE_DEVICES: prefill "0", decode "0"); '
        "gpu_memory_utilization: prefill 0.92 (vLLM default), decode 0.92 (vLLM default); together that is 1.84 of "
        "the GPU's memory, so the second instance to start fails: vLLM says \"Free memory on device ... on startup "
        'is less than desired GPU memory utilization"'
    ]
    assert found[0].rule == "host-gpu-shared"
    assert [loc.key for loc in found[0].locations] == [
        "roles.prefill.env.CUDA_VISIBLE_DEVICES",
        "roles.decode.env.CUDA_VISIBLE_DEVICES",
    ]
    assert found[0].fix == (
        "give each role its own GPUs in CUDA_VISIBLE_DEVICES (e.g. decode on a GPU no other role lists), or lower "
        "gpu_memory_utilization so the roles that share a GPU add up to less than 1"
    )


def test_separate_gpus_pass(check: Check) -> None:
    assert check({"s.toml": gpus("0", "1")}) == []
    two_each = gpus("0, 1", "GPU-2,GPU-3", prefill="tensor_parallel_size = 2\n", decode="tensor_parallel_size = 2\n")
    # (tensor_parallel_size = 2 is checked against the heads of Qwen/Qwen3-0.6B, whose config.json keys profilekit ships)
    assert check({"s.toml": two_each}) == []


def test_a_split_gpu_passes_and_an_overlap_in_a_list_is_named(check: Check) -> None:
    split = gpus("0", "0", prefill="gpu_memory_utilization = 0.45\n", decode="gpu_memory_utilization = 0.45\n")
    assert check({"s.toml": split}) == []
    overlap = gpus("0,1", "1,2", prefill="tensor_parallel_size = 2\n", decode="tensor_parallel_size = 2\n")
    assert messages(check({"s.toml": overlap}, rule="host-gpu-shared"))[0].startswith(
        'roles prefill and decode run on one host and share GPU 1 (CUDA_VISIBLE_DEVICES: prefill "0,1", decode "1,2")'
    )


def test_a_gpu_shared_with_a_command_is_a_warning(check: Check) -> None:
    text = (
        gpus("0", "1")
        + '[roles.proxy]\nkind = "command"\ncommand = ["trainer"]\n[roles.proxy.env]\nCUDA_VISIBLE_DEVICES = "1"\n'
    )
    found = check({"s.toml": text}, rule="host-gpu-shared")
    assert [(f.severity.value, f.message) for f in found] == [
        (
            "warning",
            'roles decode and proxy run on one host and share GPU 1 (CUDA_VISIBLE_DEVICES: decode "1", proxy "1"); '
            "gpu_memory_utilization: decode 0.92 (vLLM default), proxy a command: its GPU memory use is unknown; "
            "profilekit cannot tell whether the memory the command takes leaves enough for vLLM",
        )
    ]


# ---- host-gpu-count --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_fewer_gpus_than_the_world_size(check: Check, version: str) -> None:
    text = MODEL + 'tensor_parallel_size = 2\npipeline_parallel_size = 2\n[env]\nCUDA_VISIBLE_DEVICES = "0,1"\n'
    found = check({"s.toml": text}, version=version, rule="host-gpu-count")
    assert messages(found) == [
        'role serve has CUDA_VISIBLE_DEVICES = "0,1" (2 GPUs) and needs 4 GPUs (tensor_parallel_size = 2 x '
        f'pipeline_parallel_size = 2); vLLM {version} refuses to start: "World size (4) is larger than the number '
        "of available GPUs (2) in this node. If this is intentional and you are using: - ray, set "
        "'--distributed-executor-backend ray'. - multiprocessing, set '--nnodes' appropriately.\""
    ]
    assert [loc.key for loc in found[0].locations] == [
        "env.CUDA_VISIBLE_DEVICES",
        "serve.tensor_parallel_size",
        "serve.pipeline_parallel_size",
    ]
    assert found[0].fix == "list 4 GPUs in CUDA_VISIBLE_DEVICES, or lower the parallel sizes"


def test_gpus_matching_the_parallel_sizes_pass(check: Check) -> None:
    text = MODEL + 'tensor_parallel_size = 2\ndata_parallel_size = 2\n[env]\nCUDA_VISIBLE_DEVICES = "4,5,6,7"\n'
    assert check({"s.toml": text}, rule="host-gpu-count") == []
    # an external load balancer runs one data-parallel rank here
    external = MODEL + 'data_parallel_size = 2\ndata_parallel_rank = 1\n[env]\nCUDA_VISIBLE_DEVICES = "3"\n'
    assert check({"s.toml": external}, rule="host-gpu-count") == []
    # no devices listed, or a multi-node deployment: nothing to compare
    assert check({"s.toml": MODEL + "tensor_parallel_size = 8\n"}, rule="host-gpu-count") == []
    multi = MODEL + 'tensor_parallel_size = 8\nnnodes = 2\n[env]\nCUDA_VISIBLE_DEVICES = "0,1,2,3"\n'
    assert check({"s.toml": multi}, rule="host-gpu-count") == []


def test_data_parallel_ranks_need_their_own_gpus(check: Check) -> None:
    text = MODEL + 'tensor_parallel_size = 2\ndata_parallel_size = 2\n[env]\nCUDA_VISIBLE_DEVICES = "0,1"\n'
    assert messages(check({"s.toml": text}, rule="host-gpu-count")) == [
        'role serve has CUDA_VISIBLE_DEVICES = "0,1" (2 GPUs) and needs 4 GPUs (tensor_parallel_size = 2 x '
        "data_parallel_size = 2); its 2 data-parallel ranks take 2 GPUs each, so the ranks past the listed GPUs "
        "fail to start"
    ]


def test_more_gpus_than_needed_is_a_warning(check: Check) -> None:
    text = MODEL + '[env]\nCUDA_VISIBLE_DEVICES = "0,1"\n'
    found = check({"s.toml": text}, rule="host-gpu-count")
    assert [(f.severity.value, f.message, f.fix) for f in found] == [
        (
            "warning",
            'role serve has CUDA_VISIBLE_DEVICES = "0,1" (2 GPUs) and needs 1 GPU (no parallelism); vLLM uses the '
            "first 1 and the other 1 sit idle",
            "list exactly 1 GPU in CUDA_VISIBLE_DEVICES, or raise the parallel sizes to use them all",
        )
    ]


# ---- the issue's rows, end to end ------------------------------------------------------------------------


def test_issue_row_same_port_end_to_end(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"pd.toml": two_roles(prefill="port = 8100", decode="port = 8100")})
    result = run("--repo", root, "check", "pd")
    assert result.code == 1
    assert result.out == (
        "profiles/pd.toml:6:1: error host-port-shared roles prefill and decode run on one host and bind TCP port "
        "8100 (prefill serve.port = 8100, decode serve.port = 8100); all but the first to start fail with "
        '"[Errno 98] Address already in use"\n'
        "    in stack pd\n"
        "    profiles/pd.toml:12:1: roles.decode.serve.port (layer pd)\n"
        "    fix: set serve.port = 8101 on decode: every process on a host needs its own ports\n"
        "1 error, 0 warnings\n"
    )
    assert run("--repo", root, "render", "pd", "--out", root / "out").code == 1


def test_issue_row_same_gpus_end_to_end(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"pd.toml": gpus("0", "0")})
    result = run("--repo", root, "check", "pd")
    assert result.code == 1
    assert result.out == (
        "profiles/pd.toml:10:1: error host-gpu-shared roles prefill and decode run on one host and share GPU 0 "
        '(CUDA_VISIBLE_DEVICES: prefill "0", decode "0"); gpu_memory_utilization: prefill 0.92 (vLLM default), '
        "decode 0.92 (vLLM default); together that is 1.84 of the GPU's memory, so the second instance to start "
        'fails: vLLM says "Free memory on device ... on startup is less than desired GPU memory utilization"\n'
        "    in stack pd\n"
        "    profiles/pd.toml:17:1: roles.decode.env.CUDA_VISIBLE_DEVICES (layer pd)\n"
        "    fix: give each role its own GPUs in CUDA_VISIBLE_DEVICES (e.g. decode on a GPU no other role lists), or "
        "lower gpu_memory_utilization so the roles that share a GPU add up to less than 1\n"
        "1 error, 0 warnings\n"
    )
