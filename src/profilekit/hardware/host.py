"""The GPUs of this host, as `nvidia-smi` and `rocm-smi` list them (`profilekit doctor`; up.sh asks the same).

- `nvidia-smi --query-gpu=name --format=csv,noheader`: one device name per line, the name torch reports too.
- `rocm-smi --showproductname --csv`: a `device,Card Series,...` header, then `cardN,<product name>,...` per GPU; the
  product name may carry the board's form factor after the device name ("AMD Instinct MI300X OAM").
A tool that is missing is said so; one that fails gives its own message. Nothing here is cached.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
from collections.abc import Mapping

from profilekit.hardware import Gpu
from profilekit.records import record

TIMEOUT = 20  # seconds: nvidia-smi can take a while to wake a driver up
COMMANDS = {
    "cuda": ("nvidia-smi", "--query-gpu=name", "--format=csv,noheader"),
    "rocm": ("rocm-smi", "--showproductname", "--csv"),
}


@record(frozen=True, slots=True)
class Listing:
    """What one tool says of the host's GPUs."""

    tool: str
    names: tuple[str, ...]  # one device name per GPU, in the tool's order
    problem: str = ""  # the tool is missing or failed: why no names

    @property
    def ran(self) -> bool:
        return not self.problem


def list_gpus(platform: str, path: str | None) -> Listing:
    """The GPUs the tool of `platform` ("cuda", "rocm") lists, looking it up on `path`."""
    command = COMMANDS[platform]
    tool = command[0]
    found = shutil.which(tool, path=path)
    if found is None:
        return Listing(tool, (), f"{tool} is not on PATH")
    try:
        done = subprocess.run(
            [found, *command[1:]], capture_output=True, text=True, errors="replace", timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Listing(tool, (), f"{tool} could not run: {exc}")
    if done.returncode != 0:
        said = " ".join((done.stdout + done.stderr).split()) or f"exit status {done.returncode}"
        return Listing(tool, (), f"{tool} failed: {said}")
    if platform == "cuda":
        return Listing(tool, tuple(line.strip() for line in done.stdout.splitlines() if line.strip()))
    rows = csv.reader(done.stdout.splitlines())
    return Listing(tool, tuple(row[1].strip() for row in rows if len(row) > 1 and row[0].startswith("card")))


def is_model(listed: str, gpu: Gpu) -> bool:
    """The host's device name `listed` is `gpu` (rocm-smi may add the form factor after the device name)."""
    name, device = " ".join(listed.lower().split()), gpu.device_name.lower()
    return name == device or (gpu.platform == "rocm" and name.startswith(device + " "))


def identify(listed: str, gpus: Mapping[str, Gpu]) -> Gpu | None:
    """The catalogue (or repository) GPU a listed device is, if any."""
    return next((gpu for gpu in gpus.values() if is_model(listed, gpu)), None)
