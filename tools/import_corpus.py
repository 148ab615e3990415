#!/usr/bin/env python3
"""The published-launch corpus (tests/data/launches/published) through `import`, with vLLM's parser the referee.

For every case, the *original*: what each vLLM process of it is given, found without profilekit's reading —
- a script (launchers, sbatch, a P/D set's scripts) runs under real bash, with a stub `vllm` (and `python -m
  vllm.entrypoints...`) that records its argv, stand-ins for the launchers and the cluster tools (`srun`, `nsys`,
  `apptainer`, `docker`, `conda`, `module`, `curl`, `sleep`, ... run the command behind them or nothing), and
  every other unknown command a no-op (`command_not_found_handle`);
- a Kubernetes manifest: each container's `command` + `args` as the kubelet expands them (tests/test_k8s.py's
  transcription of the kubelet's expansion), a `sh -c` string run as a script is;
- a compose file: `docker-compose config` (the real tool: its interpolation, its splitting of a `command:`
  string), then as a container;
- a systemd unit: `ExecStart=` as systemd.exec(5) splits and expands it (a transcription, kept apart from
  profilekit's reading).
Then `import` of the case, and each vLLM role's rendered argv; vLLM's parser reads the original and the
rendered argv, and the two namespaces must be equal, or both refused.

`python3 tools/import_corpus.py --versions 0.33.0` writes tests/oracle/results/import-published-X.json;
tests/oracle/test_import_published.py runs it under pytest.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT / "src", REPO_ROOT, REPO_ROOT / "tools"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import yaml  # noqa: E402
from oracle_report import Oracle, compare_namespaces  # noqa: E402
from tests.test_k8s import kubelet_expand  # noqa: E402

from profilekit.errors import FindingsError, UsageError  # noqa: E402
from profilekit.importing.launch import import_launch, write_layer  # noqa: E402
from profilekit.session import Session  # noqa: E402
from profilekit.vllm.argv import render_argv  # noqa: E402
from profilekit.vllm.catalogue import load_catalogue  # noqa: E402

CORPUS = REPO_ROOT / "tests" / "data" / "launches" / "published"
RESULTS = REPO_ROOT / "tests" / "oracle" / "results"
# import's refusals of what only the running shell knows ($HOME, $1, $(...)): by design (issue 29, item 4)
RUN_TIME = re.compile(
    r"only known when the script runs|shell expansions cannot be represented|is set at run time|only known to the "
    r"shell that runs compose|is not set by an Environment= line|bash expands ~"
)
# import's refusal to write a credential into a layer (`--api-key KEY`): by design too
CREDENTIAL = re.compile(r"holds a credential|looks like a Hugging Face token")
_RECORDER = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
name = os.path.basename(sys.argv[0])
if name.startswith("python"):
    for module in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main"):
        if args[:2] == ["-m", module]:
            args = args[2:] if module.endswith("api_server") else args[3:]
            break
    else:
        sys.exit(0)
elif args[:1] == ["serve"]:
    args = args[1:]
else:
    sys.exit(0)
with open(os.environ["CORPUS_RECORD"], "a") as f:
    f.write(json.dumps(args) + "\\n")
"""
_BEHIND = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
for i in range(len(args)):
    base = os.path.basename(args[i])
    if (base == "vllm" and args[i + 1 : i + 2] == ["serve"]) or (base.startswith("python") and "-m" in args[i:i + 2]):
        os.execvp(args[i], args[i:])
    if base in ("bash", "sh") and i + 1 < len(args) and args[i + 1].startswith("-") and "c" in args[i + 1]:
        os.execvp(args[i], args[i:])
sys.exit(0)
"""
_CONTAINER = f"""#!{sys.executable}
import os, sys
args = sys.argv[2:] if sys.argv[1:2] == ["run"] else []
entry = None
takes = {{"-e","--env","-v","--volume","-p","--publish","--name","--gpus","--runtime","--ipc","--shm-size","--network",
         "--net","-w","--workdir","--mount","--device","-u","--user","--restart","--ulimit","--env-file","--entrypoint",
         "--security-opt","--cap-add","--add-host","--memory","-m","--cpus","--label","-l","--hostname","-h","--platform"}}
while args and args[0].startswith("-"):
    word = args.pop(0)
    name, eq, value = word.partition("=")
    if name in takes and not eq:
        value = args.pop(0)
    if name == "--entrypoint":
        entry = value
if not args:
    sys.exit(0)
image = args.pop(0)
if entry:
    os.execvp(entry, [entry, *args])
if args[:2] == ["vllm", "serve"]:
    args = args[2:]
os.execvp("vllm", ["vllm", "serve", *args])
"""
_SHELL_ENV = """
command_not_found_handle() { return 0; }
cd() { builtin cd "$@" 2>/dev/null || true; }
source() { builtin source "$@" 2>/dev/null || true; }
kill() { :; }
module() { :; }; ml() { :; }; conda() { :; }; spack() { :; }
"""
_NOOPS = ("sleep", "curl", "wget", "pip", "pip3", "nvidia-smi", "apt-get", "git", "huggingface-cli", "pkill", "sudo")
_NOOPS += ("rm", "cp", "mv", "hostname", "scontrol", "squeue", "sbatch", "update-alternatives", "json_pp")
_BEHINDS = ("srun", "nsys", "numactl", "uv", "uvx", "ray", "apptainer", "singularity", "mpirun", "nohup")
# what the job's environment holds on the cluster it was written for (set -u scripts read them)
_SLURM = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "node1", "SLURM_NODEID": "0", "SLURM_PROCID": "0"}
_SLURM |= {"SLURM_CPUS_PER_TASK": "8", "SLURM_SUBMIT_DIR": "/tmp", "SLURM_GPUS_ON_NODE": "1"}
# The harness's changes to a script, none touching what vLLM is given: an output redirection writes to /dev/null
# (the author's log folders do not exist here), an interpreter named by its path is named by its name (the
# author's virtual environment does not exist here: the stand-in records it), and a last `wait` lets a launch left
# in the background record before the script ends
_REDIRECTION = re.compile(r"(?<![<>&\d])(\d?&?>>?)[ \t]*(?!&)(\"[^\"]*\"|'[^']*'|[^\s;&|)]+)")
_ABSOLUTE = re.compile(r"(?<=[\s=])(['\"]?)[^\s'\"=]*/(python3?(?:\.\d+)?|vllm)\1(?=[\s'\"])")


@dataclass
class Result:
    """The corpus's figures for one release."""

    version: str
    cases: int = 0
    agreements: int = 0
    refused_by_both: list[dict[str, str]] = field(default_factory=list)
    run_time: list[dict[str, str]] = field(default_factory=list)  # import refuses what needs the running shell
    credential: list[dict[str, str]] = field(default_factory=list)  # import refuses a credential in the launch
    disagreements: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "cases": self.cases,
            "agreements": self.agreements,
            "agreement": round(self.agreements / self.cases, 4) if self.cases else None,
            "refused_by_both": self.refused_by_both,
            "refused_needing_the_running_shell": self.run_time,
            "refused_holding_a_credential": self.credential,
            "disagreements": self.disagreements,
        }


def cases() -> list[dict[str, Any]]:
    return list(tomllib.loads((CORPUS / "INDEX.toml").read_text(encoding="utf-8"))["case"])


def _files(case: dict[str, Any]) -> list[Path]:
    folder = CORPUS / case["file"]
    if folder.is_dir():
        return sorted(p for p in folder.iterdir() if p.suffix in (".sh", ".bash"))
    return [folder]


def _stubs(folder: Path) -> Path:
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    programs = {"vllm": _RECORDER, "python": _RECORDER, "python3": _RECORDER, "docker": _CONTAINER}
    programs |= {"podman": _CONTAINER} | dict.fromkeys(_BEHINDS, _BEHIND)
    programs |= dict.fromkeys(_NOOPS, "#!/bin/sh\nexit 0\n")
    for name, text in programs.items():
        path = bin_dir / name
        path.write_text(text, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (folder / "bash_env").write_text(_SHELL_ENV, encoding="utf-8")
    return bin_dir


def _script_here(path: Path, folder: Path) -> Path:
    """The script as this machine can run it (see _REDIRECTION): a copy beside the harness's files."""
    text = _ABSOLUTE.sub(lambda m: m.group(2), _REDIRECTION.sub(lambda m: m.group(1) + " /dev/null", path.read_text()))
    copy = folder / path.name
    copy.write_text(text + "\nwait\n", encoding="utf-8")  # a launch left in the background records before the end
    return copy


def _run_bash(argv: list[str], folder: Path, env: dict[str, str] | None = None) -> list[list[str]]:
    """What the stub vllm recorded when bash ran `argv` (a script, or `-c STRING`)."""
    record = folder / "record.jsonl"
    record.unlink(missing_ok=True)
    bin_dir = _stubs(folder)
    run_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(folder),
        "USER": "corpus",
        "CORPUS_RECORD": str(record),
        "BASH_ENV": str(folder / "bash_env"),
        "LANG": "C.UTF-8",
        **_SLURM,
        **(env or {}),
    }
    work = folder / "work"
    (work / "logs").mkdir(parents=True, exist_ok=True)
    # a login shell (`bash -lc`) reads /etc/profile, which sets PATH; then ~/.bash_profile, which sets it back
    (folder / ".bash_profile").write_text(f"PATH={bin_dir}:$PATH\n", encoding="utf-8")
    subprocess.run(["bash", *argv], env=run_env, cwd=work, capture_output=True, timeout=60, check=False)
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]


def _container_launch(words: list[str], image: str, env: dict[str, str], folder: Path) -> list[list[str]]:
    """What a container with these words starts: vLLM's image runs `vllm serve` with them (no command)."""
    if not words:
        return []
    name = os.path.basename(words[0])
    if name == "vllm" and words[1:2] == ["serve"]:
        return [words[2:]]
    if name.startswith("python") and words[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]:
        return [words[3:]]
    script = next((i for i, w in enumerate(words[1:], 1) if w.startswith("-") and "c" in w[1:]), None)
    if name in ("sh", "bash") and script is not None and script + 1 < len(words):
        return _run_bash(["-c", words[script + 1]], folder, env)
    del image
    return []


def originals(case: dict[str, Any], folder: Path) -> list[list[str]]:
    """Each vLLM process's words after `vllm serve`, as the case's runtime hands them over."""
    form = case["form"]
    found: list[list[str]] = []
    if form in ("launchers", "sbatch", "pd"):
        for path in _files(case):
            found += _run_bash([str(_script_here(path, folder))], folder)
        return found
    if form == "k8s":
        return _k8s_originals(CORPUS / case["file"], folder)
    if form == "compose":
        return _compose_originals(CORPUS / case["file"], folder)
    return _systemd_originals(CORPUS / case["file"])


_PODS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "LeaderWorkerSet": ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
}


def _k8s_originals(path: Path, folder: Path) -> list[list[str]]:
    found: list[list[str]] = []
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except yaml.YAMLError:
        return []
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") not in _PODS:
            continue
        pod: Any = doc
        for key in _PODS[doc["kind"]]:
            pod = pod.get(key) if isinstance(pod, dict) else None
        for container in (pod or {}).get("containers") or []:
            env: dict[str, str] = {}
            for entry in container.get("env") or []:
                if "value" in entry:
                    env[entry["name"]] = kubelet_expand(str(entry["value"] or ""), env)
            words = [
                kubelet_expand(str(w), env) for w in [*(container.get("command") or []), *(container.get("args") or [])]
            ]
            image = str(container.get("image", ""))
            if not container.get("command") and "vllm" in image:
                words = ["vllm", "serve", *words]
            found += _container_launch(words, image, env, folder)
    return found


def _compose_originals(path: Path, folder: Path) -> list[list[str]]:
    if shutil.which("docker-compose") is None:
        raise RuntimeError("docker-compose is not installed: `apt-get install docker-compose` (.ci/run does)")
    # what the shell that runs compose holds: every `${NAME:?...}` the file demands (compose refuses without), and
    # the file as docker-compose 1.29 reads it (the Compose Specification's top-level `name:` it does not know)
    demanded = dict.fromkeys(re.findall(r"\$\{(\w+):?\?", path.read_text(encoding="utf-8")), "/tmp/corpus")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("name", None)
    data.pop("volumes", None)
    for service in (data.get("services") or {}).values():  # where it builds and mounts from: not what it runs
        for key in ("build", "volumes", "env_file"):
            service.pop(key, None)
    copy = folder / "compose.yaml"
    copy.write_text(yaml.safe_dump(data), encoding="utf-8")
    env = {**os.environ, **demanded}
    done = subprocess.run(
        ["docker-compose", "-f", str(copy), "config"], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    if done.returncode != 0:
        return []
    found: list[list[str]] = []
    services = yaml.safe_load(done.stdout).get("services") or {}
    order = list(data.get("services") or {})  # docker-compose config sorts them: the file's order, as import's
    ordered = sorted(services.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))
    for _name, service in ordered:
        entry = service.get("entrypoint") or []
        command = service.get("command") or []
        entry = shlex.split(entry) if isinstance(entry, str) else list(entry)
        command = shlex.split(command) if isinstance(command, str) else list(command)
        image = str(service.get("image", ""))
        env = {k: str(v) for k, v in (service.get("environment") or {}).items() if v is not None}
        words = [*entry, *command] if entry else (["vllm", "serve", *command] if "vllm" in image else command)
        found += _container_launch([str(w) for w in words], image, env, folder)
    return found


def _systemd_originals(path: Path) -> list[list[str]]:
    """systemd.exec(5): Environment= assignments (quoted words), ExecStart= with `${X}` one word, `$X` split."""
    env: dict[str, str] = {}
    start: str | None = None
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    for raw in text.splitlines():
        key, _eq, value = raw.strip().partition("=")
        if key == "Environment":
            env.update(word.split("=", 1) for word in shlex.split(value) if "=" in word)  # type: ignore[misc]
        elif key == "ExecStart":
            start = value.lstrip("-@:+!")
    if start is None:
        return []
    words: list[str] = []
    for word in shlex.split(start):
        if re.fullmatch(r"\$[A-Za-z_]\w*", word):
            words += env.get(word[1:], "").split()
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), word))
    name = os.path.basename(words[0]) if words else ""
    if name == "vllm" and words[1:2] == ["serve"]:
        return [words[2:]]
    if name.startswith("python") and words[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]:
        return [words[3:]]
    return []


def _imported(case: dict[str, Any], version: str, root: Path) -> list[list[str]] | str:
    """The rendered argv of each vLLM role import makes of the case, or import's refusal."""
    catalogue = load_catalogue(version)
    files = _files(case)
    name = re.sub(r"[^a-z0-9-]+", "-", case["file"].lower()).strip("-")
    try:
        imported = import_launch(root, [p.name for p in files], name=name, catalogue=catalogue, cwd=files[0].parent)
    except UsageError as exc:
        return exc.message
    write_layer(root, imported)
    try:
        stack = Session.open(repo=root, vllm_version=version).stack(name)
    except FindingsError as exc:
        return "the imported layer does not load: " + "; ".join(f.message for f in exc.findings)
    return [render_argv(role.serve, catalogue) for role in stack.roles.values() if role.is_vllm]


def judge(version: str, oracle: Oracle) -> Result:
    """The corpus for one release."""
    result = Result(version)
    with tempfile.TemporaryDirectory(prefix="profilekit-published-") as tmp:
        for index, case in enumerate(cases()):
            folder = Path(tmp) / f"case{index}"
            root = folder / "repo"
            (root / "profiles").mkdir(parents=True)
            (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
            _judge_one(result, case, folder, root, oracle)
    return result


def _judge_one(result: Result, case: dict[str, Any], folder: Path, root: Path, oracle: Oracle) -> None:
    label = case["file"]
    result.cases += 1
    original = originals(case, folder)
    parsed = [oracle.parse(args) for args in original]
    accepted = bool(parsed) and all(p.get("ok") for p in parsed)
    imported = _imported(case, result.version, root)
    if isinstance(imported, str):
        if not accepted:
            why = "; ".join(str(p.get("error")) for p in parsed if not p.get("ok")) or "no vLLM process runs"
            result.agreements += 1
            result.refused_by_both.append({"case": label, "vllm": why, "import": imported})
        elif RUN_TIME.search(imported):
            result.run_time.append({"case": label, "import": imported})
        elif CREDENTIAL.search(imported):
            result.credential.append({"case": label, "import": imported})
        else:
            result.disagreements.append({"case": label, "reason": f"vLLM accepts it, import refuses: {imported}"})
        return
    if not accepted:
        why = "; ".join(str(p.get("error")) for p in parsed if not p.get("ok")) or "no vLLM process ran under bash"
        result.disagreements.append({"case": label, "reason": f"import accepts what vLLM refuses: {why}"})
        return
    if len(imported) != len(original):
        result.disagreements.append(
            {"case": label, "reason": f"{len(original)} vLLM processes run, import made {len(imported)} vLLM roles"}
        )
        return
    for argv, before in zip(imported, parsed, strict=True):
        after = oracle.parse(argv)
        problems = ["the rendered argv is refused: " + str(after.get("error"))] if not after.get("ok") else []
        problems = problems or compare_namespaces(before["namespace"], after["namespace"])
        if problems:
            result.disagreements.append({"case": label, "reason": " | ".join(problems)})
            return
    result.agreements += 1


def main(argv: list[str] | None = None) -> int:
    import argparse

    from tests.oracle.oracle_client import OracleWorker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", nargs="+", default=["0.33.0"])
    options = parser.parse_args(argv)
    for version in options.versions:
        with OracleWorker(version) as oracle:
            result = judge(version, oracle)
        path = RESULTS / f"import-published-{version}.json"
        path.write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"{version}: {result.agreements}/{result.cases} agree -> {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
