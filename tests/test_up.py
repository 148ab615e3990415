"""`up.sh` (issue 13, item 3): a stack with several roles starts on one host as one unit, with real processes.

The stand-in `vllm` is a small python server answering GET /health on the host and port (or Unix socket) of its
argv; the stand-in `vllm-router` refuses to start unless the servers it is given already answer /health, so a
wrong start order fails the test. No process of a run may outlive `up.sh`: every test checks the session.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run

VLLM_STUB = f"""#!{sys.executable}
import http.server, os, signal, socket, socketserver, sys, threading, time
args = sys.argv[1:]
def option(name, default=None):
    return args[args.index(name) + 1] if name in args else default
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *_):
        pass
    def address_string(self):
        return "local"
def stop(*_):
    if os.environ.get("STUB_TERM_RECORD"):  # its pid, and when SIGTERM reached it (a clock all processes share)
        fd = os.open(os.environ["STUB_TERM_RECORD"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, f"{{os.getpid()}} {{time.monotonic()}}".encode())
        os.close(fd)
    if os.environ.get("STUB_IGNORE_SIGTERM"):
        os.write(1, b"ignoring SIGTERM\\n")
        return
    os.write(1, b"stopping on SIGTERM\\n")  # not print: it could re-enter one the signal interrupted
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print(f"loading {{args[1]}}", file=sys.stderr, flush=True)
print("weights 50%\\rweights 100%", file=sys.stderr, flush=True)  # a progress bar redraws after \\r
time.sleep(float(os.environ.get("STUB_LOAD_SECONDS", "0")))
if option("--ssl-certfile"):
    import ssl
    server = http.server.ThreadingHTTPServer((option("--host", "127.0.0.1"), int(option("--port", "8000"))), Health)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(option("--ssl-certfile"), option("--ssl-keyfile"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    where = f"https port {{option('--port')}}"
elif option("--uds"):
    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True
    server = Server(option("--uds"), Health)
    where = option("--uds")
else:
    server = http.server.ThreadingHTTPServer((option("--host", "127.0.0.1"), int(option("--port", "8000"))), Health)
    where = f"port {{option('--port')}}"
print(f"serving on {{where}}", flush=True)
if "STUB_EXIT_WHEN" in os.environ:
    def die():
        while not os.path.exists(os.environ["STUB_EXIT_WHEN"]):
            time.sleep(0.05)
        print(f"dying with status {{os.environ['STUB_EXIT_STATUS']}}", flush=True)
        os._exit(int(os.environ["STUB_EXIT_STATUS"]))
    threading.Thread(target=die, daemon=True).start()
server.serve_forever()
"""

ROUTER_STUB = f"""#!{sys.executable}
import os, signal, sys, time, urllib.request
args = sys.argv[1:]
urls = [args[args.index(option) + 1] for option in ("--prefill", "--decode")]
for url in urls:
    try:
        urllib.request.urlopen(url + "/health", timeout=2)
    except OSError as exc:
        print(f"router: {{url}}/health does not answer: {{exc}}", flush=True)
        sys.exit(1)
def stop(*_):  # os.write: a print here could re-enter one the signal interrupted
    os.write(1, b"router stopping\\n")
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print(f"router: {{urls[0]}} and {{urls[1]}} answer, routing on port {{args[args.index('--port') + 1]}}", flush=True)
open("router.ready", "w").close()
while True:
    time.sleep(1)
"""


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def pd_layer(ports: list[int], *, decode_env: str = "", prefill_env: str = "") -> str:
    prefill, decode, proxy = ports
    return f"""
        [layer]
        description = "prefill, decode and a router on one host"

        [serve]
        model = "org/model"
        host = "0.0.0.0"

        [roles.prefill.serve]
        port = {prefill}
        [roles.prefill.env]
        STUB_ROLE = "prefill"
        {prefill_env}

        [roles.decode.serve]
        port = {decode}
        [roles.decode.env]
        STUB_ROLE = "decode"
        {decode_env}

        [roles.proxy]
        kind = "command"
        command = ["vllm-router", "--prefill", "http://127.0.0.1:${{roles.prefill.serve.port}}",
                   "--decode", "http://127.0.0.1:${{roles.decode.serve.port}}", "--port", "{proxy}"]

        [roles.decode]
        kind = "vllm"

        [roles.prefill]
        kind = "vllm"
    """


@pytest.fixture
def stub_path(tmp_path: Path) -> str:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, text in (("vllm", VLLM_STUB), ("vllm-router", ROUTER_STUB)):
        (folder / name).write_text(text, encoding="utf-8")
        (folder / name).chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


@dataclass
class Up:
    """A running `bash up.sh` in a session of its own, its merged output collected line by line."""

    proc: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:  # bytes: a text stream would split lines at a carriage return
                self._queue.put(line.decode("utf-8").rstrip("\n"))
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def until(self, line: str, timeout: float = 15) -> list[str]:
        """Read output until `line` arrives; the lines so far."""
        deadline = time.monotonic() + timeout
        while line not in self.lines:
            got = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            if got is None:
                raise AssertionError(f"up.sh ended before {line!r}:\n" + "\n".join(self.lines))
            self.lines.append(got)
        return self.lines

    def until_all(self, lines: list[str]) -> list[str]:
        for line in lines:
            self.until(line)
        return self.lines

    def finish(self, timeout: float = 15) -> tuple[int, list[str]]:
        code = self.proc.wait(timeout=timeout)
        while (got := self._queue.get(timeout=5)) is not None:
            self.lines.append(got)
        return code, self.lines

    def session(self) -> list[str]:
        """Every process still alive in up.sh's session (pid and command); an exited one its new parent has not
        reaped yet (a zombie, `<defunct>`) runs nothing and is not counted."""
        ps = subprocess.run(["ps", "-e", "-o", "sid=,stat=,pid=,args="], capture_output=True, text=True, check=True)
        rows = [line.split(None, 2) for line in ps.stdout.splitlines()]
        return [row[2] for row in rows if row[0] == str(self.proc.pid) and not row[1].startswith("Z")]

    def remaining(self, timeout: float = 5) -> list[str]:
        """The processes of the session once it has had `timeout` seconds to end (a loaded machine is slow)."""
        deadline = time.monotonic() + timeout
        while (alive := self.session()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return alive


# Runs a command with SIGINT at its default: a test run started in the background by a shell without job control
# (`.ci/run &`) inherits SIGINT ignored, and neither bash (a trap) nor Python (KeyboardInterrupt) can catch a
# signal that was ignored when it started. GNU env resets it before it execs the command (same process).
CATCH_CTRL_C = ["env", "--default-signal=INT"]


@pytest.fixture
def up(stub_path: str, tmp_path: Path) -> Iterator[type[Up]]:
    started: list[Up] = []

    def start(script: Path, **env: str) -> Up:
        proc = subprocess.Popen(
            [*CATCH_CTRL_C, "bash", str(script)],
            env={"PATH": stub_path, "LANG": "C.UTF-8", **env},
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(Up(proc))
        return started[-1]

    yield start  # type: ignore[misc]
    for item in started:  # never leave a stray process behind a failed test
        if item.proc.poll() is None:
            os.killpg(item.proc.pid, signal.SIGKILL)
        for line in item.session():
            pid = int(line.split()[0]) if line.split()[0].isdigit() else None
            if pid:
                os.kill(pid, signal.SIGKILL)


def render(run: Run, repo: Path, stack: str, out: Path, *args: str) -> Path:
    result = run("--repo", repo, "render", stack, "--out", out, *args)
    assert result.code == 0, result
    return out / "up.sh"


def started_lines(ports: list[int]) -> list[str]:
    """What every healthy start prints last: up.sh's line, the router's (in either order)."""
    return [
        "up.sh: every role started: prefill decode proxy (Ctrl-C stops them)",
        f"proxy   | router: http://127.0.0.1:{ports[0]} and http://127.0.0.1:{ports[1]} answer, "
        f"routing on port {ports[2]}",
    ]


def test_up_sh_is_written_for_several_roles_only(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    ports = free_ports(3)
    repo = make_repo({"pd.toml": pd_layer(ports), "one.toml": '[serve]\nmodel = "org/model"\n'})
    script = render(run, repo, "pd", tmp_path / "pd")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    manifest = json.loads((tmp_path / "pd" / "manifest.json").read_text(encoding="utf-8"))
    assert [item["path"] for item in manifest["files"]] == [
        "decode.env",
        "decode.sh",
        "prefill.env",
        "prefill.sh",
        "proxy.env",
        "proxy.sh",
        "up.sh",
    ]
    text = script.read_text(encoding="utf-8")
    assert "names=(prefill decode proxy)\n" in text
    assert "labels=(prefill 'decode ' 'proxy  ')\n" in text
    assert "probes=(http http '')\n" in text
    assert f"addresses=(127.0.0.1 127.0.0.1 '')\nports=({ports[0]} {ports[1]} '')\n" in text
    render(run, repo, "one", tmp_path / "one")
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["manifest.json", "serve.env", "serve.sh"]
    render(run, repo, "pd", tmp_path / "role", "--role", "prefill")
    assert not (tmp_path / "role" / "up.sh").exists()
    render(run, repo, "pd", tmp_path / "env-only", "--target", "env")
    assert not (tmp_path / "env-only" / "up.sh").exists()


def test_roles_start_in_order_with_prefixed_output_and_sigterm_stops_them_all(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path
) -> None:
    ports = free_ports(4)
    site = f"[layer]\nabstract = true\n\n[roles.prefill.serve]\nport = {ports[3]}\n"
    repo = make_repo({"pd.toml": pd_layer(ports[:3], decode_env='STUB_LOAD_SECONDS = "1.5"'), "site.toml": site})
    running = up(render(run, repo, "pd+site", tmp_path / "out"))  # the site layer moves prefill's port
    ports = [ports[3], ports[1], ports[2]]
    lines = running.until_all(started_lines(ports))
    assert lines[0] == "up.sh: starting prefill decode; waiting up to 600 s for each to answer /health"
    assert set(lines[1:-2]) == {
        "prefill | loading org/model",
        "prefill | weights 50%\rprefill | weights 100%",
        f"prefill | serving on port {ports[0]}",
        "up.sh: prefill is healthy",
        "decode  | loading org/model",
        "decode  | weights 50%\rdecode  | weights 100%",
        f"decode  | serving on port {ports[1]}",
        "up.sh: decode is healthy",
    }
    assert lines.index("up.sh: decode is healthy") > lines.index(f"decode  | serving on port {ports[1]}")
    assert sorted(lines[-2:]) == sorted(started_lines(ports))  # the proxy starts as up.sh says so
    assert len(running.session()) >= 6  # up.sh, three roles, their output prefixers

    running.proc.send_signal(signal.SIGTERM)
    code, lines = running.finish()
    assert code == 143
    tail = lines[lines.index("up.sh: SIGTERM received: stopping every role") :]
    assert sorted(tail[1:]) == [
        "decode  | stopping on SIGTERM",
        "prefill | stopping on SIGTERM",
        "proxy   | router stopping",
    ]
    assert running.remaining() == []


def test_a_role_that_dies_stops_the_others_and_gives_its_status(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path
) -> None:
    ports = free_ports(3)
    dies = 'STUB_EXIT_WHEN = "router.ready"\n        STUB_EXIT_STATUS = "3"'
    repo = make_repo({"pd.toml": pd_layer(ports, decode_env=dies)})
    running = up(render(run, repo, "pd", tmp_path / "out"))
    running.until_all(started_lines(ports))
    code, lines = running.finish()
    assert code == 3
    tail = lines[lines.index("decode  | dying with status 3") :]
    assert tail[1] == "up.sh: decode exited with status 3: stopping every role"
    assert sorted(tail[2:]) == ["prefill | stopping on SIGTERM", "proxy   | router stopping"]
    assert running.remaining() == []


def test_ctrl_c_stops_every_role(make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path) -> None:
    """Ctrl-C at a terminal sends SIGINT to up.sh's process group: the roles, in groups of their own, are stopped
    by up.sh (SIGTERM), not killed mid-line, and their last lines still arrive with their prefix."""
    ports = free_ports(3)
    repo = make_repo({"pd.toml": pd_layer(ports)})
    running = up(render(run, repo, "pd", tmp_path / "out"))
    running.until_all(started_lines(ports))
    os.killpg(running.proc.pid, signal.SIGINT)
    code, lines = running.finish()
    assert code == 130
    tail = lines[lines.index("up.sh: SIGINT received: stopping every role") :]
    assert sorted(tail[1:]) == [
        "decode  | stopping on SIGTERM",
        "prefill | stopping on SIGTERM",
        "proxy   | router stopping",
    ]
    assert running.remaining() == []


def test_a_role_that_fails_to_start_stops_the_others_before_the_proxy_starts(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path
) -> None:
    ports = free_ports(3)
    files = {"pd.toml": pd_layer(ports, prefill_env="HF_TOKEN = { secret = true }")}
    repo = make_repo(files)
    running = up(render(run, repo, "pd", tmp_path / "out"))
    code, lines = running.finish()
    assert code == 1
    assert "prefill | prefill.sh: secret HF_TOKEN is not set; export it in the launching environment" in lines
    tail = lines[lines.index("up.sh: prefill exited with status 1: stopping every role") :]
    assert tail[1:] in ([], ["decode  | stopping on SIGTERM"])  # decode may not have reached its handler yet
    assert not any(line.startswith("proxy") for line in lines)
    assert running.remaining() == []


def test_health_timeout_stops_everything_with_124_and_sigkill_follows_a_stuck_role(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path
) -> None:
    ports = free_ports(3)
    stuck = 'STUB_LOAD_SECONDS = "60"\n        STUB_IGNORE_SIGTERM = "1"'
    repo = make_repo({"pd.toml": pd_layer(ports, decode_env=stuck)})
    script = render(run, repo, "pd", tmp_path / "out")
    running = up(script, PROFILEKIT_UP_HEALTH_TIMEOUT="3", PROFILEKIT_UP_STOP_TIMEOUT="1")
    code, lines = running.finish()
    assert code == 124
    assert lines[0] == "up.sh: starting prefill decode; waiting up to 3 s for each to answer /health"
    tail = lines[lines.index("up.sh: no answer from /health within 3 s (PROFILEKIT_UP_HEALTH_TIMEOUT): decode") :]
    assert sorted(tail[1:]) == [
        "decode  | ignoring SIGTERM",
        "prefill | stopping on SIGTERM",
        "up.sh: sending SIGKILL to what is still running of: decode",
    ]
    assert tail[-1] == "up.sh: sending SIGKILL to what is still running of: decode"
    assert running.remaining() == []


def _ended(pid: int) -> bool:
    """Whether process `pid` has ended: gone, or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between the open and the read
        return True


@pytest.mark.parametrize("timeout", ["2", "1.5", "2"])
def test_sigkill_follows_sigterm_after_the_stop_timeout_to_within_a_fifth_of_a_second(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path, timeout: str
) -> None:
    """`PROFILEKIT_UP_STOP_TIMEOUT=2 bash up.sh` (and 1.5), then SIGTERM to up.sh: decode ignores SIGTERM and is
    killed no sooner than the timeout after up.sh got the signal, and no later than 0.2 s past it (bash's SECONDS
    counts whole seconds: with it, the kill came 1.2 to 2.0 s after SIGTERM). Run three times."""
    ports = free_ports(3)
    record = tmp_path / "decode.term"
    stubborn = f'STUB_IGNORE_SIGTERM = "1"\n        STUB_TERM_RECORD = "{record}"'
    repo = make_repo({"pd.toml": pd_layer(ports, decode_env=stubborn)})
    running = up(render(run, repo, "pd", tmp_path / "out"), PROFILEKIT_UP_STOP_TIMEOUT=timeout)
    running.until_all(started_lines(ports))
    sent = time.monotonic()
    running.proc.send_signal(signal.SIGTERM)
    while not record.exists() or not record.read_text(encoding="ascii"):
        assert time.monotonic() - sent < 5, "decode never got SIGTERM"
        time.sleep(0.001)
    pid, termed = record.read_text(encoding="ascii").split()
    while not _ended(int(pid)):
        assert time.monotonic() - sent < float(timeout) + 5, "decode was never killed"
        time.sleep(0.001)
    killed = time.monotonic()
    assert sent <= float(termed) < sent + 0.2  # up.sh passed SIGTERM on at once
    assert float(timeout) <= killed - sent <= float(timeout) + 0.2, f"killed {killed - sent:.3f} s after SIGTERM"
    code, lines = running.finish()
    assert code == 143
    assert lines[-1] == "up.sh: sending SIGKILL to what is still running of: decode"
    assert running.remaining() == []


def test_bad_settings_and_arguments_are_refused(make_repo: MakeRepo, run: Run, tmp_path: Path, stub_path: str) -> None:
    repo = make_repo({"pd.toml": pd_layer(free_ports(3))})
    script = render(run, repo, "pd", tmp_path / "out")
    for value in ("soon", "1.", ".5", "-1", "1e3"):
        env = {"PATH": stub_path, "PROFILEKIT_UP_STOP_TIMEOUT": value}
        proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            2,
            "",
            f"up.sh: PROFILEKIT_UP_STOP_TIMEOUT must be a number of seconds (30, or 1.5), not '{value}'\n",
        )
    proc = subprocess.run(
        ["bash", str(script), "--port", "1"], env={"PATH": stub_path}, capture_output=True, text=True, check=False
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "up.sh: takes no arguments (to change a role, change its layers and render again)\n",
    )


def tls_files(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and its key (tests/data/tls, made once: no openssl needed)."""
    data = Path(__file__).resolve().parent / "data" / "tls"
    key, cert = folder / "key.pem", folder / "cert.pem"
    shutil.copyfile(data / "localhost-key.pem", key)
    shutil.copyfile(data / "localhost-cert.pem", cert)
    return key, cert


TLS_AND_SOCKET = """
        [roles.socket.serve]
        uds = "socket.sock"

        [roles.tls.serve]
        port = {port}
        ssl_keyfile = "{key}"
        ssl_certfile = "{cert}"

        [roles.socket]
        kind = "vllm"

        [roles.tls]
        kind = "vllm"
"""


def test_roles_on_tls_or_a_unix_socket_are_asked_with_python3(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path, stub_path: str
) -> None:
    ports = free_ports(4)
    key, cert = tls_files(tmp_path)
    layer = pd_layer(ports[:3]) + TLS_AND_SOCKET.format(port=ports[3], key=key, cert=cert)
    script = render(run, make_repo({"pd.toml": layer}), "pd", tmp_path / "out")
    assert "probes=(http http unix https '')\n" in script.read_text(encoding="utf-8")
    running = up(script)
    lines = running.until("up.sh: every role started: prefill decode socket tls proxy (Ctrl-C stops them)")
    assert lines[0] == "up.sh: starting prefill decode socket tls; waiting up to 600 s for each to answer /health"
    assert {"socket  | serving on socket.sock", "up.sh: socket is healthy"} <= set(lines)
    assert {f"tls     | serving on https port {ports[3]}", "up.sh: tls is healthy"} <= set(lines)
    running.proc.send_signal(signal.SIGTERM)
    assert running.finish()[0] == 143
    assert running.remaining() == []

    no_python = tmp_path / "no-python"
    no_python.mkdir()
    for tool in ("bash", "dirname"):
        (no_python / tool).symlink_to(shutil.which(tool) or tool)
    proc = subprocess.run(
        ["bash", str(script)], env={"PATH": str(no_python)}, capture_output=True, text=True, check=False
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "up.sh: python3 is not on PATH: up.sh needs it to ask socket for /health over a Unix socket "
        "(bash speaks plain HTTP only)\n",
    )


def test_example_stack_writes_up_sh(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path / "out")
    assert result.code == 0, result
    text = (tmp_path / "out" / "up.sh").read_text(encoding="utf-8")
    assert "names=(prefill decode proxy)\nlabels=(prefill 'decode ' 'proxy  ')\nprobes=(http http '')\n" in text
    assert "addresses=(127.0.0.1 127.0.0.1 '')\nports=(8100 8200 '')\n" in text


def test_roles_on_several_hosts_get_no_up_sh_and_render_says_so(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    hosts = 'VLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.1"'
    layer = pd_layer(free_ports(3), prefill_env=hosts, decode_env=hosts.replace("10.0.0.1", "10.0.0.2"))
    result = run("--repo", make_repo({"pd.toml": layer}), "render", "pd", "--out", tmp_path / "out")
    assert result.code == 0, result
    assert result.err == (
        "note: up.sh not written: the roles run on several hosts (prefill on 10.0.0.1, decode on 10.0.0.2, "
        "by VLLM_NIXL_SIDE_CHANNEL_HOST)\n"
    )
    assert not (tmp_path / "out" / "up.sh").exists()


# ---- the GPU check (issue 27, item 5) ----
# `up.sh` checks, before any role starts, that the host has the GPUs the roles declare (issue 27, item 5).
#
# The roles run as in tests/test_up.py (stand-in `vllm` servers and router); the host's GPUs are what a stand-in
# `nvidia-smi` / `rocm-smi` on PATH lists, in the formats the real tools print: `nvidia-smi --query-gpu=name
# --format=csv,noheader` one device name per line, `rocm-smi --showproductname --csv` a `device,Card Series,...`
# header and one `cardN,...` row per GPU.

H100 = "NVIDIA H100 80GB HBM3"
SITE = '[layer]\nabstract = true\n\n[hardware]\ngpu = "{gpu}"\ngpus_per_node = 8\n'
NVIDIA_SMI = """#!/usr/bin/env bash
# a stand-in for nvidia-smi: the GPUs of $STUB_GPUS (one name per line), or the driver error of $STUB_SMI_FAILS
if [[ -n ${STUB_SMI_FAILS:-} ]]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
  exit 9
fi
[[ "$*" == "--query-gpu=name --format=csv,noheader" ]] || { echo "unexpected arguments: $*" >&2; exit 64; }
printf '%s\\n' "$STUB_GPUS"
"""
ROCM_SMI = """#!/usr/bin/env bash
[[ "$*" == "--showproductname --csv" ]] || { echo "unexpected arguments: $*" >&2; exit 64; }
echo "device,Card Series,Card Model,Card Vendor,Card SKU,Subsystem ID,Device Rev,Node ID,GUID,GFX Version"
i=0
while IFS= read -r name; do
  echo "card$i,$name,0x74a1,Advanced Micro Devices Inc. [AMD/ATI],M3000100,0x74a1,0x00,$((i + 2)),0,gfx942"
  i=$((i + 1))
done <<<"$STUB_GPUS"
"""


def _tool(stub_path: str, name: str, text: str) -> None:
    folder = Path(stub_path.split(":", 1)[0])
    (folder / name).write_text(text, encoding="utf-8")
    (folder / name).chmod(0o755)


def _script(make_repo: MakeRepo, run: Run, tmp_path: Path, gpu: str = "H100-SXM-80GB") -> tuple[Path, list[int]]:
    ports = free_ports(3)
    repo = make_repo({"pd.toml": pd_layer(ports), "site.toml": SITE.format(gpu=gpu)})
    return render(run, repo, "pd+site", tmp_path / "out"), ports


def _starts(running: Up, ports: list[int]) -> list[str]:
    lines = running.until_all(started_lines(ports))
    running.proc.send_signal(signal.SIGTERM)
    code, _ = running.finish()
    assert code == 143
    assert running.remaining() == []
    return lines


def test_the_roles_start_when_the_host_has_the_declared_gpus(
    make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path
) -> None:
    script, ports = _script(make_repo, run, tmp_path)
    text = script.read_text(encoding="utf-8")
    assert "gpu_names=(H100-SXM-80GB)\ngpu_devices=('NVIDIA H100 80GB HBM3')\n" in text
    assert "as many as they use together: 2 x H100-SXM-80GB." in text
    _tool(stub_path, "nvidia-smi", NVIDIA_SMI)
    lines = _starts(up(script, STUB_GPUS=f"{H100}\n{H100}\n{H100}"), ports)
    assert lines[0] == "up.sh: this host has 3 x H100-SXM-80GB: the roles need 2"


def test_a_host_without_enough_of_the_gpu_stops_before_any_role_starts(
    make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path
) -> None:
    script, _ports = _script(make_repo, run, tmp_path)
    _tool(stub_path, "nvidia-smi", NVIDIA_SMI)
    # an L40S is not an H100, and "NVIDIA H100 PCIe" is another H100 than the SXM one declared
    running = up(script, STUB_GPUS=f"{H100}\nNVIDIA L40S\nNVIDIA H100 PCIe")
    code, lines = running.finish()
    assert code == 2
    assert lines == [
        "up.sh: the roles need 2 x H100-SXM-80GB ('NVIDIA H100 80GB HBM3'); this host has 1 "
        "(nvidia-smi: 1 x NVIDIA H100 80GB HBM3, 1 x NVIDIA H100 PCIe, 1 x NVIDIA L40S)",
        "up.sh: run the stack on a host with them, declare the GPU this host has ([hardware] gpu), "
        "or set PROFILEKIT_UP_SKIP_GPU_CHECK=1 to start anyway",
    ]
    assert running.remaining() == []


def test_the_check_can_be_skipped(make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path) -> None:
    script, ports = _script(make_repo, run, tmp_path)
    _tool(stub_path, "nvidia-smi", NVIDIA_SMI)
    lines = _starts(up(script, STUB_GPUS="NVIDIA L40S", PROFILEKIT_UP_SKIP_GPU_CHECK="1"), ports)
    assert lines[0] == "up.sh: PROFILEKIT_UP_SKIP_GPU_CHECK=1: not checking this host's GPUs"


def test_a_failing_nvidia_smi_stops_with_its_message(
    make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path
) -> None:
    script, _ports = _script(make_repo, run, tmp_path)
    _tool(stub_path, "nvidia-smi", NVIDIA_SMI)
    code, lines = up(script, STUB_SMI_FAILS="1").finish()
    assert code == 2
    assert lines == [
        "up.sh: nvidia-smi failed, so this host's GPUs are unknown: NVIDIA-SMI has failed because it couldn't "
        "communicate with the NVIDIA driver.",
        "up.sh: fix the driver, or set PROFILEKIT_UP_SKIP_GPU_CHECK=1 to start without the check",
    ]


def test_without_nvidia_smi_the_roles_start_and_up_sh_says_it_did_not_check(
    make_repo: MakeRepo, run: Run, up: type[Up], tmp_path: Path
) -> None:
    script, ports = _script(make_repo, run, tmp_path)
    lines = _starts(up(script), ports)
    assert lines[0] == "up.sh: nvidia-smi is not on PATH: not checking that this host has 2 x H100-SXM-80GB"


def test_a_rocm_gpu_is_checked_with_rocm_smi(
    make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path
) -> None:
    script, ports = _script(make_repo, run, tmp_path, gpu="MI300X")
    _tool(stub_path, "rocm-smi", ROCM_SMI)
    lines = _starts(up(script, STUB_GPUS="AMD Instinct MI300X OAM\nAMD Instinct MI300X OAM"), ports)
    assert lines[0] == "up.sh: this host has 2 x MI300X: the roles need 2"
    code, lines = up(script, STUB_GPUS="AMD Instinct MI250X").finish()
    assert code == 2
    assert lines[0] == (
        "up.sh: the roles need 2 x MI300X ('AMD Instinct MI300X'); this host has 0 (rocm-smi: 1 x AMD Instinct MI250X)"
    )


def test_a_stack_that_declares_no_gpu_checks_none(
    make_repo: MakeRepo, run: Run, up: type[Up], stub_path: str, tmp_path: Path
) -> None:
    ports = free_ports(3)
    repo = make_repo({"pd.toml": pd_layer(ports)})
    script = render(run, repo, "pd", tmp_path / "out")
    assert "as many as they use together: none declared, so none is checked." in script.read_text(encoding="utf-8")
    _tool(stub_path, "nvidia-smi", NVIDIA_SMI)
    lines = _starts(up(script, STUB_GPUS="NVIDIA L40S"), ports)
    assert lines[0] == "up.sh: starting prefill decode; waiting up to 600 s for each to answer /health"
