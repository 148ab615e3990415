"""`render --target slurm`: `job.sbatch` passes bash -n and shellcheck, and runs under a real two-node SLURM on
this machine (tools/slurm/local-cluster.sh: munge, slurmctld, and one slurmd each for node1 and node2) with stub
`vllm` and `vllm-router` that record what each role received on each node: argv, env, GPUs, node addresses and
secrets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_k8s import ONE_HOST_LAYERS
from tests.test_render import HOSTILE, shellcheck
from tests.test_target_wiring import ENV, PAIR_PROXY
from tests.test_wiring import PD

CLUSTER = REPO_ROOT / "tools" / "slurm" / "local-cluster.sh"
SLURM_CONF = Path(os.environ.get("PROFILEKIT_SLURM_DIR", "/var/tmp/profilekit-slurm")) / "slurm.conf"
# the test cluster's nodes (local-cluster.sh: two slurmd on this machine, NodeName=node1 and node2, each with
# 8 CPUs and 8 GPUs of GPU_TYPE)
NODES = ("node1", "node2")
GPUS_PER_NODE = 8
GPU_TYPE = "nvidia_h100_80gb_hbm3"
# what each of SLURM_JOB_NODELIST's nodes is reached at (local-cluster.sh: NodeAddr=127.0.0.1 for both)
NODE_ADDRESS = "127.0.0.1"

# A `vllm` and a `vllm-router` that write {argv, env} to $STUB_RECORD_DIR/<step name>@<node>.<task>.json, one
# file per task of the step (the step is named after its role; the node is $SLURMD_NODENAME, the task
# $SLURM_PROCID, so a role whose step spans several nodes leaves one record per node: `node_records`);
# `vllm serve` then answers GET /health with 200 on its --port until it is stopped (with STUB_STOP_AFTER_HEALTH=1,
# it answers once and exits 0: a job of vLLM roles only then ends; `--headless`, a worker node of a multi-node
# role, serves nothing and waits to be stopped). The role STUB_FAIL names exits with status 3.
STUB = """\
import http.server, json, os, sys
role, node, task = os.environ["SLURM_JOB_NAME"], os.environ["SLURMD_NODENAME"], os.environ["SLURM_PROCID"]
name = f"{role}@{node}.{task}.json"
with open(os.path.join(os.environ["STUB_RECORD_DIR"], name), "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ)}, f)
if os.environ.get("STUB_FAIL") == os.environ["SLURM_JOB_NAME"]:
    sys.exit(3)
if sys.argv[1:2] == ["serve"] and "--headless" in sys.argv:  # a worker node serves no API: it waits for its leader
    import signal
    signal.pause()
if sys.argv[1:2] == ["serve"] and "--port" in sys.argv:
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("0.0.0.0", int(sys.argv[sys.argv.index("--port") + 1])), Health)
    if os.environ.get("STUB_STOP_AFTER_HEALTH") == "1":  # answer /health once, then end (and with it the job)
        server.handle_request()
        sys.exit(0)
    server.serve_forever()
sys.exit(int(os.environ.get("STUB_EXIT", "0")))
"""


def _cluster_up() -> bool:
    """Whether the test cluster answers with the nodes of NODES (not those of an earlier local-cluster.sh)."""
    env = {**os.environ, "SLURM_CONF": str(SLURM_CONF)}
    if shutil.which("scontrol") is None or not SLURM_CONF.exists():
        return False
    ping = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, check=False)
    if "UP" not in ping.stdout:
        return False
    listed = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], env=env, capture_output=True, text=True, check=False)
    return sorted(set(listed.stdout.split())) == sorted(NODES)


@pytest.fixture(scope="module")
def slurm() -> dict[str, str]:
    """The environment in which `sbatch` reaches the two-node test cluster, (re)started here when it is not up."""
    if not _cluster_up():
        if os.geteuid() != 0:
            pytest.skip("no SLURM test cluster: run tools/slurm/local-cluster.sh as root (.ci/run does)")
        started = subprocess.run(["bash", str(CLUSTER)], capture_output=True, text=True, check=False, timeout=600)
        assert started.returncode == 0, started.stderr
    return {"SLURM_CONF": str(SLURM_CONF)}


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("vllm", "vllm-router", "my-proxy"):
        (folder / name).write_text(f"#!{sys.executable}\n{STUB}", encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


def node_records(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The stubs' records in FOLDER ($STUB_RECORD_DIR) by (role, node): {argv, env} of the role's task on that
    node (env has SLURMD_NODENAME, SLURM_NODEID, SLURM_PROCID, CUDA_VISIBLE_DEVICES...). One task per role and
    node: a second one is an error here."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        key = (record["env"]["SLURM_JOB_NAME"], record["env"]["SLURMD_NODENAME"])
        assert key not in found, f"two tasks of role {key[0]} on node {key[1]}: {path.name}"
        found[key] = record
    return found


def _by_role(found: dict[tuple[str, str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each role's one record, for jobs whose every role runs on one node."""
    roles = [role for role, _node in found]
    assert len(roles) == len(set(roles)), f"a role ran on several nodes: {sorted(found)}"
    return {role: record for (role, _node), record in found.items()}


def _sbatch(
    job: Path, slurm: dict[str, str], stubs: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], str, dict[str, dict[str, Any]]]:
    """Submit the job (`--wait`), return sbatch's result, the job's output and each role's record (each role on
    one node; `submit` and `node_records` have them by role and node)."""
    proc, output, found = submit(job, slurm, stubs, *options, env=env)
    return proc, output, _by_role(found)


def submit(
    job: Path, slurm: dict[str, str], stubs: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], str, dict[tuple[str, str], dict[str, Any]]]:
    """Submit the job (`--wait`), return sbatch's result, the job's output and the records by role and node."""
    folder = job.parent / "records"
    folder.mkdir(exist_ok=True)
    output = job.parent / "job.out"
    base = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        "STUB_RECORD_DIR": str(folder),
        "PROFILEKIT_SLURM_HEALTH_TIMEOUT": "60",
        **slurm,
    }
    proc = subprocess.run(
        # --time: a job that hangs is ended by SLURM, not left behind in the test cluster
        ["sbatch", "--wait", "--time=3", f"--output={output}", *options, str(job)],
        env={**base, **(env or {})},
        cwd=job.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return proc, output.read_text(encoding="utf-8") if output.exists() else "", node_records(folder)


def _static_checks(job: Path) -> None:
    assert subprocess.run(["bash", "-n", str(job)], capture_output=True, check=False).returncode == 0
    checked = subprocess.run([shellcheck(), str(job)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout


def test_the_example_pd_stack_runs_each_role_with_srun(
    run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    out = tmp_path / "out"
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--target", "slurm")
    assert result.code == 0, result
    assert sorted(p.name for p in out.iterdir()) == ["job.sbatch", "manifest.json"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [item["path"] for item in manifest["files"]] == ["job.sbatch"]
    job = out / "job.sbatch"
    assert job.stat().st_mode & 0o777 == 0o755
    _static_checks(job)
    text = job.read_text(encoding="utf-8")
    head = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert head == [
        "#SBATCH --job-name=qwen-disaggregated",
        "#SBATCH --nodes=3",
        "#SBATCH --ntasks=3",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --export=ALL",
    ]
    assert "# `sbatch --nodes=1 --gres=gpu:2 job.sbatch` runs every role on one node: then they share" in text
    # one of the test cluster's nodes: every role on it, with the GPUs of both vLLM roles
    proc, output, records = _sbatch(job, slurm, stubs, "--nodes=1", "--gres=gpu:2", env={"HF_TOKEN": HOSTILE})
    assert proc.returncode == 0, output
    assert sorted(records) == ["decode", "prefill", "proxy"], output
    assert "job.sbatch: prefill is healthy on 127.0.0.1:8100\n" in output
    assert "job.sbatch: decode is healthy on 127.0.0.1:8200\n" in output
    prefill, decode, proxy = records["prefill"], records["decode"], records["proxy"]
    assert prefill["argv"][1:] == [
        "serve",
        "Qwen/Qwen3-0.6B",
        "--host",
        "0.0.0.0",
        "--port",
        "8100",
        "--gpu-memory-utilization",
        "0.9",
        "--max-num-seqs",
        "256",
        "--enforce-eager",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}',
    ]
    assert proxy["argv"][1:] == [
        "--policy",
        "round_robin",
        "--vllm-pd-disaggregation",
        "--prefill",
        f"http://{NODE_ADDRESS}:8100",
        "--decode",
        f"http://{NODE_ADDRESS}:8200",
        "--host",
        "0.0.0.0",
        "--port",
        "8192",
    ]
    for record, side_port in ((prefill, "5600"), (decode, "5601")):
        env = record["env"]
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == NODE_ADDRESS
        assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == side_port
        assert env["UCX_NET_DEVICES"] == "all"
        assert env["VLLM_LOGGING_LEVEL"] == "INFO"
        assert env["SLURM_GPUS_ON_NODE"] == "1"
        assert env["HF_TOKEN"] == HOSTILE
    # each vLLM step got one GPU of its own (the layers' CUDA_VISIBLE_DEVICES is SLURM's to set; which of the
    # node's GPUs depends on the jobs that run beside it)
    gpus = [prefill["env"]["CUDA_VISIBLE_DEVICES"], decode["env"]["CUDA_VISIBLE_DEVICES"]]
    assert all(gpu.isdigit() for gpu in gpus) and gpus[0] != gpus[1], gpus
    assert "CUDA_VISIBLE_DEVICES" not in proxy["env"]
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST" not in proxy["env"]
    assert proxy["env"]["HF_TOKEN"] == HOSTILE
    assert HOSTILE not in job.read_text(encoding="utf-8")


def test_every_example_stack_renders_a_job_that_passes_shellcheck(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", "--all", "--out", tmp_path, "--target", "slurm")
    assert result.code == 0, result
    jobs = sorted(tmp_path.glob("*/job.sbatch"))
    assert len(jobs) == len(list(tmp_path.iterdir())) > 1
    for job in jobs:
        _static_checks(job)


def test_a_missing_secret_stops_the_job_before_any_role_starts(
    run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    out = tmp_path / "out"
    assert run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--target", "slurm").code == 0
    # sbatch runs in an environment of PATH, LANG, SLURM_CONF and the stubs' settings alone (_sbatch)
    proc, output, records = _sbatch(out / "job.sbatch", slurm, stubs, "--nodes=1", "--gres=gpu:2")
    assert proc.returncode == 1, output
    assert output == "job.sbatch: secret HF_TOKEN is not set; export it in the environment that runs sbatch\n"
    assert records == {}


LITERAL = HOSTILE.replace("${", "$${")  # a layer writes `$${` for the literal text `${`
# no single quote: env-unrepresentable (what env files cannot carry) still applies to the slurm target
ODD = '$(touch PWNED) "x" `id` ; \\ tab\t é\nsecond line'


def test_a_role_that_exits_before_it_is_healthy_ends_the_job_with_its_status(
    run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    out = tmp_path / "out"
    assert run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--target", "slurm").code == 0
    env = {"HF_TOKEN": "x", "STUB_FAIL": "prefill"}
    proc, output, records = _sbatch(out / "job.sbatch", slurm, stubs, "--nodes=1", "--gres=gpu:2", env=env)
    assert proc.returncode == 3, output
    assert "job.sbatch: prefill exited with status 3 before answering /health\n" in output
    assert "proxy" not in records  # the command role never started


HOSTILE_LAYERS = {
    "odd.toml": f"""
        [serve]
        model = "Qwen/Qwen3-0.6B"
        served_model_name = [{json.dumps(LITERAL)}]

        [env]
        ODD = {json.dumps(ODD)}
        API_KEY = {{ secret = true }}

        [roles.engine.serve]
        port = 8300
        tensor_parallel_size = 2

        [roles.front]
        kind = "command"
        command = ["my-proxy", "--upstream", "http://localhost:${{roles.engine.serve.port}}/v1", "--port", "9000"]

        [roles.engine]
        kind = "vllm"
    """,
}


def test_values_reach_each_role_exactly_as_composed(
    make_repo: MakeRepo, run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    repo = make_repo(
        HOSTILE_LAYERS,
        config='[vllm]\nversion = "0.33.0"\n\n[render.slurm]\npartition = "debug"\ntime = "00:05:00"\n',
    )
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "odd", "--out", out, "--target", "slurm")
    assert result.code == 0, result
    job = out / "job.sbatch"
    _static_checks(job)
    text = job.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=odd",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks=2",
        "#SBATCH --gres=gpu:2",
        "#SBATCH --export=ALL",
        "#SBATCH --partition=debug",
        "#SBATCH --time=00:05:00",
    ]
    assert (
        "#   --upstream http://localhost:8300/v1: localhost written as the address of the node of role engine, at run time\n"
        in text
    )
    secret = "key with 'quotes' and $HOME"
    proc, output, records = _sbatch(job, slurm, stubs, "--nodes=1", env={"API_KEY": secret})
    assert proc.returncode == 0, output
    engine, front = records["engine"], records["front"]
    assert engine["argv"][1:] == [
        "serve",
        "Qwen/Qwen3-0.6B",
        "--served-model-name",
        HOSTILE,
        "--port",
        "8300",
        "--tensor-parallel-size",
        "2",
    ]
    assert front["argv"][1:] == ["--upstream", f"http://{NODE_ADDRESS}:8300/v1", "--port", "9000"]
    assert engine["env"]["ODD"] == ODD
    assert engine["env"]["API_KEY"] == secret
    assert engine["env"]["SLURM_GPUS_ON_NODE"] == "2"
    assert not list(tmp_path.rglob("PWNED"))
    assert not (out / "PWNED").exists()


def test_vllms_proxy_style_host_and_port_pairs_reach_the_other_nodes(
    make_repo: MakeRepo, run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    """Issue 25: `--prefiller-host 127.0.0.1 --prefiller-port 8100` and an env URL get the node's address too."""
    repo = make_repo({"pd.toml": PD + f"command = {PAIR_PROXY}\n\n[roles.proxy.env]\n{ENV}\n"})
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "pd", "--out", out, "--target", "slurm")
    assert result.code == 0, result
    job = out / "job.sbatch"
    _static_checks(job)
    proc, output, records = _sbatch(job, slurm, stubs, "--nodes=1", "--gres=gpu:2")
    assert proc.returncode == 0, output
    proxy = records["proxy"]
    assert proxy["argv"][1:] == [
        "--port",
        "8192",
        "--prefiller-host",
        NODE_ADDRESS,
        "--prefiller-port",
        "8100",
        "--decoder-host",
        NODE_ADDRESS,
        "--decoder-port",
        "8200",
    ]
    assert proxy["env"]["DECODE_URL"] == f"http://{NODE_ADDRESS}:8200/v1"
    text = job.read_text(encoding="utf-8")
    assert '--decoder-host "${address[1]}"' in text
    assert 'DECODE_URL=http://"${address[1]}":8200/v1' in text


def test_one_host_findings_do_not_stop_the_slurm_target(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    """Both roles take port 8000 and side channel 5600: a clash on one host, fine on two nodes."""
    repo = make_repo(ONE_HOST_LAYERS)
    script = run("--repo", repo, "render", "pd", "--out", tmp_path / "script", "--target", "script,slurm")
    assert script.code == 1, script
    assert not (tmp_path / "script").exists()
    result = run("--repo", repo, "render", "pd", "--out", tmp_path / "slurm", "--target", "slurm")
    assert result.code == 0, result
    assert result.err == (
        "note: 2 findings (host-port-shared, pd-side-channel-port) not applied to --target slurm: each role runs "
        "on a host of its own; `check` reports them for the script and env targets\n"
    )
    _static_checks(tmp_path / "slurm" / "job.sbatch")


def test_a_setting_sbatch_would_split_is_refused(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo(ONE_HOST_LAYERS, config='[vllm]\nversion = "0.33.0"\n\n[render.slurm]\npartition = "gpu a"\n')
    result = run("--repo", repo, "render", "pd", "--target", "slurm")
    assert result.code == 1, result
    assert result.err == (
        "profilekit.toml:5:1: error invalid-config render.slurm.partition: 'gpu a' is not one word sbatch takes: letters, digits and '_', '.', ',', ':', '+', '-'\n"
        "1 error, 0 warnings\n"
    )


def test_one_role_renders_no_job(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "slurm")
    assert result.code == 0, result
    before = (tmp_path / "job.sbatch").read_text(encoding="utf-8")
    result = run(
        "--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "slurm", "--role", "proxy"
    )
    assert result.code == 0, result
    assert result.err.endswith(
        "note: job.sbatch not written: it starts every role of the stack; render without --role for it\n"
    )
    assert (tmp_path / "job.sbatch").read_text(encoding="utf-8") == before


TEAM_LAYERS = {
    "team.toml": """
        [serve]
        model = "Qwen/Qwen3-0.6B"

        [roles.engine.serve]
        port = 8300

        [roles.front]
        kind = "command"
        command = ["my-proxy", "--upstream", "http://localhost:8300/v1", "--port", "9000"]

        [roles.engine]
        kind = "vllm"
    """,
    # a team's own job: an extra #SBATCH line and a line of its own before the default body
    "team-templates/slurm.sbatch.j2": (
        "{{ directives }}#SBATCH --comment=team\n"
        'echo "team prologue for {{ job_name }}:" {{ roles | join(" ") | sh }} >&2\n'
        "{{ body }}"
    ),
}


def test_a_team_template_job_runs_with_its_own_lines(
    make_repo: MakeRepo, run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    repo = make_repo(TEAM_LAYERS, config='[vllm]\nversion = "0.33.0"\n[render]\ntemplates = "team-templates"\n')
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "team", "--out", out, "--target", "slurm").code == 0
    job = out / "job.sbatch"
    # bash -n only: shellcheck reads the default's `# shellcheck disable` as file-wide before the first command
    assert subprocess.run(["bash", "-n", str(job)], capture_output=True, check=False).returncode == 0
    lines = job.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if line.startswith("#SBATCH")][-1] == "#SBATCH --comment=team"
    assert "# Layers, in merge order: team (profiles/team.toml)." in lines
    proc, output, records = _sbatch(job, slurm, stubs, "--nodes=1")  # both roles on one node
    assert proc.returncode == 0, output
    assert output.splitlines()[0] == "team prologue for team: engine front"
    assert sorted(records) == ["engine", "front"], output
    assert records["front"]["argv"][1:] == ["--upstream", f"http://{NODE_ADDRESS}:8300/v1", "--port", "9000"]


# The test cluster's GPUs are typed as H100s (tools/slurm/local-cluster.sh): SLURM itself decides which typed
# request it can run (issue 27, item 5; tests/test_target_gpus.py checks what is rendered).
def test_slurm_runs_the_h100_job_on_its_h100s_and_refuses_a_b200_job(
    make_repo: MakeRepo, run: Run, tmp_path: Path, slurm: dict[str, str], stubs: Path
) -> None:
    site = '[layer]\nabstract = true\n\n[hardware]\ngpu = "{gpu}"\n'
    app = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 2\n'
    layers = {"app.toml": app, "h100.toml": site.format(gpu="H100-SXM-80GB"), "b200.toml": site.format(gpu="B200")}
    repo = make_repo(layers)
    assert run("--repo", repo, "render", "app+h100", "--out", tmp_path / "h100", "--target", "slurm").code == 0
    proc, output, records = _sbatch(tmp_path / "h100" / "job.sbatch", slurm, stubs, env={"STUB_EXIT": "0"})
    assert proc.returncode == 0, (proc.stderr, output)
    assert sorted(records) == ["serve"]
    assert len(records["serve"]["env"]["CUDA_VISIBLE_DEVICES"].split(",")) == 2  # SLURM gave the step 2 H100s

    assert run("--repo", repo, "render", "app+b200", "--out", tmp_path / "b200", "--target", "slurm").code == 0
    assert "#SBATCH --gres=gpu:nvidia_b200:2\n" in (tmp_path / "b200" / "job.sbatch").read_text(encoding="utf-8")
    proc, _output, records = _sbatch(tmp_path / "b200" / "job.sbatch", slurm, stubs)
    assert proc.returncode != 0
    assert "Batch job submission failed: Requested node configuration is not available" in proc.stderr
    assert records == {}
