"""A client for the vLLM oracle worker (tools/oracle/worker.py).

``OracleWorker("0.33.0")`` builds or reuses the release's oracle environment
through ``tools/oracle/build_env.py``, starts one long-lived worker process and
sends it JSON-line requests::

    with OracleWorker("0.33.0") as oracle:
        oracle.parse(["model", "--use-replayssm"])["namespace"]["use_replayssm"]
        oracle.validate(["model", "--use-replayssm"], env={...}, config_json={...})
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_TOOLS = REPO_ROOT / "tools" / "oracle"
if str(ORACLE_TOOLS) not in sys.path:
    sys.path.insert(0, str(ORACLE_TOOLS))

import build_env  # noqa: E402

BuildError = build_env.BuildError
SUPPORTED_VERSIONS = build_env.SUPPORTED_VERSIONS


GPU_ENV = "PROFILEKIT_ORACLE_GPU"
VLLM_CACHE_ENV = "PROFILEKIT_ORACLE_VLLM_CACHE"
GPU_COUNT = 8  # devices a GPU-mode worker reports: a full node


def gpu_spec(gpu: Any, count: int = GPU_COUNT) -> dict[str, Any]:
    """The `PROFILEKIT_ORACLE_GPU` JSON of a catalogue GPU (tools/oracle/gpu_platform.py)."""
    return {
        "name": gpu.name,
        "platform": gpu.platform,
        "capability": list(gpu.capability),
        "memory_bytes": gpu.memory_bytes,
        "device_name": gpu.device_name,
        "arch": gpu.arch,
        "count": count,
    }


class OracleError(RuntimeError):
    """The worker could not be started, died, or did not answer in time."""


class OracleWorker:
    """One running worker for one vLLM release."""

    def __init__(
        self,
        version: str,
        *,
        startup_timeout: float = 600.0,
        extra_env: dict[str, str] | None = None,
        gpu: Any = None,
        gpu_count: int = GPU_COUNT,
        vllm_cache: str | None = None,
    ) -> None:
        """`gpu` (a `profilekit.hardware.Gpu`, or None): the worker runs vLLM's own CUDA or ROCm platform answering
        as `gpu_count` such devices (tools/oracle/gpu_platform.py); None: the CPU platform judged as a GPU host.
        `vllm_cache`: the VLLM_CACHE_ROOT of a GPU-mode worker (model inspection), to share one between the workers
        of a release; by default each has a fresh one."""
        self.version = version
        self.gpu = gpu
        self.env = build_env.ensure(version)
        if gpu is not None:
            extra_env = {**(extra_env or {}), GPU_ENV: json.dumps(gpu_spec(gpu, gpu_count))}
            if vllm_cache is not None:
                extra_env[VLLM_CACHE_ENV] = vllm_cache
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the worker
            mode="w+", prefix=f"profilekit-oracle-{version}-", suffix=".log", delete=False
        )
        self._proc = subprocess.Popen(
            self.env.worker_command(),
            env={**self.env.worker_environ(), **(extra_env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            bufsize=0,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self._proc.stdout is not None
        self._selector.register(self._proc.stdout, selectors.EVENT_READ)
        self.hello = self._read(startup_timeout)
        if (
            not self.hello.get("ok")
            or self.hello.get("version") != version
            or (gpu is not None and (self.hello.get("gpu") or {}).get("name") != gpu.name)
        ):
            self.close()
            raise OracleError(f"vllm {version} oracle worker did not start: {self.hello!r}\n{self.stderr_tail()}")

    # -- requests --------------------------------------------------------------

    def request(self, payload: dict[str, Any], *, timeout: float = 300.0) -> dict[str, Any]:
        """Send one request and return its answer."""
        if self._proc.poll() is not None:
            raise OracleError(f"vllm {self.version} oracle worker has exited:\n{self.stderr_tail()}")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(payload).encode() + b"\n")
        except BrokenPipeError as exc:
            raise OracleError(f"vllm {self.version} oracle worker has exited:\n{self.stderr_tail()}") from exc
        return self._read(timeout)

    def parse(self, argv: list[str]) -> dict[str, Any]:
        """``vllm serve ARGV`` through the real parser (argv starts with the model)."""
        return self.request({"op": "parse", "argv": argv})

    def validate(
        self,
        argv: list[str],
        env: dict[str, str | None] | None = None,
        config_json: dict[str, Any] | None = None,
        gpu: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Parse, validate and build the engine config as ``vllm serve`` would (``gpu``: the device vLLM's batch
        defaults query, tools/oracle/worker.py)."""
        request = {"op": "validate", "argv": argv, "env": env or {}, "config_json": config_json}
        if gpu is not None:
            request["gpu"] = gpu
        return self.request(request)

    def catalogue(self) -> list[dict[str, Any]]:
        answer = self.request({"op": "catalogue"})
        if not answer.get("ok"):
            raise OracleError(f"catalogue failed: {answer!r}")
        catalogue: list[dict[str, Any]] = answer["catalogue"]
        return catalogue

    def envs(self, names: list[str]) -> dict[str, Any]:
        """What ``vllm.envs`` and ``os.environ`` hold in the worker right now."""
        return self.request({"op": "envs", "names": names})

    # -- life cycle ------------------------------------------------------------

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._selector.close()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._log.close()
        os.unlink(self._log.name)

    def __enter__(self) -> OracleWorker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def stderr_tail(self, chars: int = 4000) -> str:
        try:
            with open(self._log.name, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-chars:]
        except OSError:
            return ""

    def _read(self, timeout: float) -> dict[str, Any]:
        """The next answer line (unbuffered reads, so select() never misses one)."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._proc.kill()
                raise OracleError(
                    f"vllm {self.version} oracle worker gave no answer in {timeout:.0f} s:\n{self.stderr_tail()}"
                )
            if not self._selector.select(remaining):
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._proc.wait()
                raise OracleError(
                    f"vllm {self.version} oracle worker exited with status {self._proc.returncode}:\n"
                    f"{self.stderr_tail()}"
                )
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer
