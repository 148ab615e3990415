"""The `slurm` render target: `job.sbatch`, one batch job that starts every role of the stack with `srun`.

The job asks for one node per role, and for a role that spans nodes (compose/shape.py) one per node of it
(`--nodes` = `--ntasks` = their sum); each node of the job is a slot, the roles' slots in order, and slot i runs
on node i of `scontrol show hostnames "$SLURM_JOB_NODELIST"` (modulo the nodes it got: `sbatch --nodes=1` packs
every one-node role onto one node). A multi-node role gets one `srun` per node, with that node's own options
(render/nodes.py: its `--node-rank`, the leader's address as `--master-addr`, `--headless` but on the leader).
A homogeneous job, not a heterogeneous one: its components did not schedule on a one-node cluster. What ties a stack to one host in the script target changes
here as in k8s (README, "SLURM batch job"):
- a role's GPUs are its step's `--gres=gpu:TYPE:N` (N as rules/host.py `gpu_need` counts them, k8s `gpu_count`;
  TYPE from the GPU it declares, render/gpus.py); the job asks for the largest N per node; when the roles declare
  GPUs of different types, which one homogeneous job cannot ask for node by node, it asks for GPUs of any type and
  says so; SLURM sets `CUDA_VISIBLE_DEVICES`, so a written one is left out;
- a node's address is its `NodeAddr` (as `scontrol show node` reports it), resolved to an IPv4 address when it
  resolves to one; a NIXL role gets it as `VLLM_NIXL_SIDE_CHANNEL_HOST` (replacing a written one);
- a loopback `host:PORT` whose PORT is another role's port becomes that role's node address at run time, and a
  loopback bind (`--host 127.0.0.1`) becomes `0.0.0.0`, so roles on other nodes reach it.
Every value is one single-quoted bash word (quoting.py), handed to the step as an argument of a fixed launcher
(`export "$1"` per env entry, then `exec "$@"`): nothing in it is expanded by any shell. Secrets come from the
environment `sbatch` runs in (`--export=ALL`); the job stops before starting anything when one is missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from profilekit import __version__
from profilekit.compose.shape import role_shape
from profilekit.output import Rendered
from profilekit.quoting import comment_text, shell_quote
from profilekit.render import team
from profilekit.render.context import header_layers, health_probe, stack_context
from profilekit.render.gpus import gres, gres_type, unknown_gpu_names
from profilekit.render.hosts import (
    SIDE_CHANNEL_HOST,
    Rewrite,
    bind_every_address,
    gpu_count,
    note,
    rewrites,
    side_channel_ports,
    spliced,
)
from profilekit.render.nodes import base_argv, node_words, overridden
from profilekit.rules.host import DEVICES, option_word

if TYPE_CHECKING:
    from pathlib import Path

    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.load.layerdata import SlurmSection
    from profilekit.render.templating import Sandbox
    from profilekit.vllm.catalogue import Catalogue

JOB_FILE = "job.sbatch"
HEALTH_TIMEOUT = 1800  # seconds: model download and load, as the k8s startup probe waits
_NOT_JOB_NAME = re.compile(r"[^A-Za-z0-9._+-]+")

# What every job runs after its roles' lines: the launcher each step execs, and the wait for /health.
_RUNTIME = r"""
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
  say "needs bash 5.1 or newer on the node it runs on (for wait -n PID...); this is bash $BASH_VERSION"
  exit 2
fi
# The launcher each step runs: `bash -c "$launch" ROLE NAME=VALUE... -- COMMAND...` exports each NAME=VALUE
# as given (no expansion: they are arguments, not code), then execs COMMAND.
launch='while [[ $1 != -- ]]; do export "$1"; shift; done; shift; exec "$@"'

mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
node_of() { # node_of SLOT: the node of slot SLOT (round robin over the job's nodes)
  printf '%s' "${nodes[$1 % ${#nodes[@]}]}"
}
address_of() { # address_of NODE: its NodeAddr, as an IPv4 address where it resolves to one
  local addr resolved
  addr=$(scontrol show node -o "$1" | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p')
  addr=${addr:-$1}
  resolved=$(getent ahostsv4 "$addr" | awk 'NR == 1 { print $1 }') || true
  printf '%s' "${resolved:-$addr}"
}
healthy() { # healthy ADDRESS PORT: whether GET /health answers 200
  (
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf 'GET /health HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
    IFS= read -r -t 5 status <&3 && [[ $status == "HTTP/1."?" 200"* ]]
  ) 2>/dev/null
}
health_timeout=${PROFILEKIT_SLURM_HEALTH_TIMEOUT:-__HEALTH_TIMEOUT__}
if ! [[ $health_timeout =~ ^[0-9]+$ ]]; then
  say "PROFILEKIT_SLURM_HEALTH_TIMEOUT must be a whole number of seconds, not '$health_timeout'"
  exit 2
fi
"""

_WAIT = r"""
deadline=$((SECONDS + health_timeout))
for index in "${!probe_ports[@]}"; do
  until healthy "${address[index]}" "${probe_ports[index]}"; do
    if ! kill -0 "${pids[index]}" 2>/dev/null; then
      status=0
      wait "${pids[index]}" || status=$?
      say "${names[index]} exited with status $status before answering /health"
      exit "$status"
    fi
    if ((SECONDS >= deadline)); then
      say "${names[index]} gave no answer on /health within ${health_timeout} s (PROFILEKIT_SLURM_HEALTH_TIMEOUT)"
      exit 124
    fi
    sleep 1
  done
  say "${names[index]} is healthy on ${address[index]}:${probe_ports[index]}"
done
"""

_END = r"""
say "every role started: ${names[*]}"
# the job ends when one role ends, with its status; SLURM then stops the other steps
status=0
wait -n "${pids[@]}" || status=$?
say "a role exited with status $status: ending the job"
exit "$status"
"""


def job_name(spec: str) -> str:
    """The stack as a job name: what `squeue` shows, without characters a shell or SLURM could trip on."""
    return _NOT_JOB_NAME.sub("_", spec)


def render_slurm(
    stack: Stack,
    *,
    version: str,
    catalogue: Catalogue | None,
    settings: SlurmSection,
    root: Path | None,
    templates: Sandbox | None = None,
) -> dict[str, Rendered]:
    """`job.sbatch` for every role of the stack; a team's `slurm.sbatch.j2` (targets/team.py) replaces it."""
    roles = list(stack.roles.values())
    steps = [_Step(index, role, version=version, catalogue=catalogue, root=root) for index, role in enumerate(roles)]
    for step, after in zip(steps[1:], steps, strict=False):
        step.first = after.first + after.nodes  # each role's nodes follow the previous role's
    _point_at_nodes(stack, steps, version=version, root=root)
    kinds = _gres_types(stack, steps, settings)
    text = _script(stack, steps, version=version, settings=settings, kinds=kinds)
    if templates is not None and team.team_template(templates, team.SLURM):
        lines = text.splitlines(keepends=True)
        count = next((n for n, line in enumerate(lines) if not line.startswith(("#!", "#SBATCH "))), len(lines))
        context = {
            **stack_context(stack, version),
            "job_name": job_name(stack.spec),
            "roles": [step.role.name for step in steps],
            "gpus": [step.gpus for step in steps],
            "gres": [gres(step.kind, step.gpus) if step.gpus else "" for step in steps],
            "script": text,
            "directives": "".join(lines[:count]),
            "body": "".join(lines[count:]),
        }
        text = team.render_bash(templates, team.SLURM, context)
    return {JOB_FILE: Rendered(text, 0o755)}


class _Step:
    """One role's `srun` line and what the job needs to know of it."""

    def __init__(
        self, index: int, role: RoleConfig, *, version: str, catalogue: Catalogue | None, root: Path | None
    ) -> None:
        self.index, self.role = index, role
        self.argv: list[str] = base_argv(role, catalogue)
        self.shape = role_shape(role)
        self.nodes = self.shape.nodes if self.shape is not None else 1
        self.first = 0  # its first node among the job's (the leader's, for a role that spans nodes)
        self.notes: list[str] = []
        self.port: int | None = None
        self.probe = False  # the job waits for its /health before starting the command roles
        self.side_channel_ports = side_channel_ports(role, version, root)
        self.side_channel = bool(self.side_channel_ports)
        self.rewrites: list[Rewrite] = []  # loopback addresses of other roles in its argv and env
        self.reach: Callable[[int], str] = _address  # the address of the role of an index (its leader's node)
        self.gpus = gpu_count(role)
        self.kind = ""  # the GRES type its GPUs are asked for with ("": any)
        # each word of the argv as bash pieces: a quoted literal, or a reference to another role's address
        self.words: list[str] = []
        if role.is_vllm:
            kind, _where, port = health_probe(role, catalogue)
            if kind == "http":
                self.port, self.probe = int(port), True
            elif kind == "https":
                self.port = int(port)
                self.notes.append("not waited for: its /health is on TLS (ssl_certfile); bash asks plain HTTP only")
            else:
                self.notes.append("not waited for: serve.uds puts its API server on a Unix socket")
            if self.side_channel and SIDE_CHANNEL_HOST in role.env:
                self.notes.append(f"{SIDE_CHANNEL_HOST} written as the address of its node, at run time")
        else:
            found = option_word(self.argv, "--port")
            if found is not None and found[1].isdigit():
                self.port = int(found[1])
        bind_every_address(self.argv, self.notes, "roles on other nodes reach it")
        if DEVICES in role.env:
            self.notes.append(f"{DEVICES} left out: SLURM sets it to the GPUs of the step's --gres")
        if self.shape is not None:
            self.notes.append(
                f"{self.shape.describe()}: one srun per node; node rank 0, the leader, serves the API, the others "
                "run --headless; --master-addr is the leader node's address, at run time"
            )
            self.notes += overridden(role)

    def slots(self) -> range:
        """Its nodes' places among the job's nodes (`node[SLOT]`, `address[SLOT]`)."""
        return range(self.first, self.first + self.nodes)

    def slot_name(self, slot: int) -> str:
        rank = slot - self.first
        return self.role.name if self.shape is None else f"{self.role.name}[node {rank}]"

    def env_words(self, slot: int) -> list[str]:
        words: list[str] = []
        for name, value in self.role.env.items():
            if isinstance(value, dict) or name == DEVICES or (self.side_channel and name == SIDE_CHANNEL_HOST):
                continue  # a secret comes from the job's environment
            here = [rewrite for rewrite in self.rewrites if rewrite.endpoint.env == name]
            if here:
                words.append(shell_quote(f"{name}=") + spliced(value, here, self.reach, shell_quote))
            else:
                words.append(shell_quote(f"{name}={value}"))
        if self.side_channel:
            words.append(f'{SIDE_CHANNEL_HOST}="${{address[{slot}]}}"')
        return words


def _address(slot: int) -> str:
    return f'"${{address[{slot}]}}"'


def _point_at_nodes(stack: Stack, steps: list[_Step], *, version: str, root: Path | None) -> None:
    """Every loopback address a role uses to reach another role (a URL, `host:port`, a `--X-host` word, an env value)
    becomes that role's node address at run time; each rewrite is a note of the job (render/hosts.py `rewrites`)."""
    plans = rewrites(
        stack,
        [step.role for step in steps],
        [{*([step.port] if step.port is not None else []), *step.side_channel_ports} for step in steps],
        [step.argv for step in steps],
        target="slurm",
        version=version,
        root=root,
    )

    def leader(index: int) -> str:  # a role is reached on its first node: a multi-node role's leader
        return _address(steps[index].first)

    for step, plan in zip(steps, plans, strict=True):
        step.rewrites, step.reach = plan, leader
        for at, word in enumerate(step.argv):
            here = [rewrite for rewrite in plan if not rewrite.endpoint.env and rewrite.endpoint.host_at == at]
            step.words.append(spliced(word, here, leader, shell_quote))
        step.notes += [
            note(rewrite, f"the address of the node of role {steps[rewrite.index].role.name}, at run time")
            for rewrite in plan
        ]


def _gres_types(stack: Stack, steps: list[_Step], settings: SlurmSection) -> list[str]:
    """Each GPU role's GRES type (`step.kind`) from the GPU it declares, when the roles' types agree; the notes
    say what each asks for. Returns the job's distinct types."""
    gpu_steps = [step for step in steps if step.gpus]
    declared = {step.index: stack.gpu(step.role.name) for step in gpu_steps}
    kinds = {index: gres_type(gpu, settings.gres_types) if gpu else "" for index, gpu in declared.items()}
    distinct = sorted(set(kinds.values()))
    for step in gpu_steps:
        gpu = declared[step.index]
        if gpu is None:
            step.notes.append("GPUs of any type: no GPU declared ([hardware] gpu)")
        elif len(distinct) > 1:
            step.notes.append(
                f"declares {gpu.name} (GRES type {kinds[step.index] or 'none'}), but one job asks every node for the "
                "same GPUs: it asks for GPUs of any type (render the roles of each GPU as a stack of their own)"
            )
        else:
            step.kind = kinds[step.index]
            origin = (
                "[render.slurm.gres_types]" if gpu.name in settings.gres_types else "as SLURM's AutoDetect names it"
            )
            shown = f"GRES type {step.kind} ({origin})" if step.kind else "GPUs of any type ([render.slurm.gres_types])"
            step.notes.append(f"{step.gpus} x {gpu.name}: {shown}")
    return distinct


def misspelt_settings(stack: Stack, settings: SlurmSection) -> list[str]:
    """`[render.slurm.gres_types]` keys that name no GPU profilekit knows (catalogue or `[gpus]`)."""
    return unknown_gpu_names("render.slurm.gres_types", list(settings.gres_types), sorted(stack.gpus))


def _script(stack: Stack, steps: list[_Step], *, version: str, settings: SlurmSection, kinds: list[str]) -> str:
    spec = comment_text(stack.spec)
    gpus = max(step.gpus for step in steps)
    kind = kinds[0] if len(kinds) == 1 else ""
    slots = sum(step.nodes for step in steps)
    header = [
        "#!/usr/bin/env bash",
        f"#SBATCH --job-name={job_name(stack.spec)}",
        f"#SBATCH --nodes={slots}",
        f"#SBATCH --ntasks={slots}",
        *([f"#SBATCH --gres={gres(kind, gpus)}"] if gpus else []),
        "#SBATCH --export=ALL",
        *(f"#SBATCH --{option}={value}" for option, value in _settings(settings)),
        f"# Generated by profilekit {__version__}: stack {spec}, vLLM {version}.",
        f"# Layers, in merge order: {header_layers(stack)}.",
        f"# Do not edit by hand: change the layers and run `profilekit render {spec} --target slurm` again.",
        "# Submit it with `sbatch job.sbatch`: every role on a node of its own. Secrets come from the environment",
        "# sbatch runs in. The vLLM roles start first; the command roles once each answers /health (up to",
        f"# PROFILEKIT_SLURM_HEALTH_TIMEOUT seconds, default {HEALTH_TIMEOUT}). The job ends when one role ends.",
    ]
    if len(steps) > 1 and slots == len(steps):  # a role that spans nodes cannot share one
        pack = f" --gres={gres(kind, sum(step.gpus for step in steps))}" if gpus else ""
        header += [
            f"# `sbatch --nodes=1{pack} job.sbatch` runs every role on one node: then they share its ports, as",
            f"# `profilekit check {spec}` checks them for one host.",
        ]
    for step in steps:
        kind = f"vLLM, {step.gpus} GPU{'s' if step.gpus != 1 else ''}" if step.role.is_vllm else "command"
        kind += f" on each of {step.nodes} nodes" if step.shape is not None else ""
        header.append(f"# role {step.index}: {comment_text(step.role.name)} ({kind})")
        header += [f"#   {comment_text(note)}" for note in step.notes]
    lines = [
        *header,
        "# Values are single-quoted on purpose: nothing in them may expand.",
        "# shellcheck disable=SC2016",
        "set -euo pipefail",
        f"job={shell_quote(JOB_FILE)}",
        """say() { printf '%s: %s\\n' "$job" "$*" >&2; }""",
    ]
    secrets = sorted({name for step in steps for name, value in step.role.env.items() if isinstance(value, dict)})
    for name in secrets:
        lines += [
            f'if [ -z "${{{name}:-}}" ]; then',
            f'  echo "{JOB_FILE}: secret {name} is not set; export it in the environment that runs sbatch" >&2',
            "  exit 1",
            "fi",
            f"export {name}",
        ]
    lines.append(_RUNTIME.strip("\n").replace("__HEALTH_TIMEOUT__", str(HEALTH_TIMEOUT)))
    lines += [
        f"names=({' '.join(shell_quote(step.slot_name(slot)) for step in steps for slot in step.slots())})",
        "node=() address=() pids=() probe_ports=()",
        f"for ((index = 0; index < {slots}; index++)); do",
        '  node[index]=$(node_of "$index")',
        '  address[index]=$(address_of "${node[index]}")',
        "done",
    ]
    for step in steps:
        if step.role.is_vllm:
            lines += [line for slot in step.slots() for line in _srun(step, slot)]
    lines.append(_WAIT.strip("\n"))
    for step in steps:
        if not step.role.is_vllm:
            lines += _srun(step, step.first)
    lines.append(_END.strip("\n"))
    return "\n".join(lines) + "\n"


def _srun(step: _Step, slot: int) -> list[str]:
    """The `srun` of one node of a role (`slot`: its place among the job's nodes)."""
    asks = f"--gres={gres(step.kind, step.gpus)}" if step.gpus else "--gres=none"
    name = shell_quote(step.role.name)
    argv, words = step.argv, step.words
    rank = slot - step.first
    if step.shape is not None:  # render/nodes.py: the node's rank, the leader's address, --headless but on rank 0
        argv = [*argv, *node_words(str(rank), "", headless=rank > 0)]
        words = [*words, *node_words(shell_quote(str(rank)), _address(step.first), headless=rank > 0)]
    command = [*step.env_words(slot), "--", *_option_lines(argv, words)]
    lines = [
        f"# {comment_text(step.slot_name(slot))}",
        f'say "starting ${{names[{slot}]}} on ${{node[{slot}]}}"',
        f'srun --nodes=1 --ntasks=1 --exact --nodelist="${{node[{slot}]}}" {asks} --job-name={name} \\',
        f'  bash -c "$launch" {name} \\',
        *(f"  {word} \\" for word in command[:-1]),
        f"  {command[-1]} &",
        f"pids[{slot}]=$!",
    ]
    if step.probe and step.port is not None and rank == 0:  # a headless node serves no API
        lines.append(f"probe_ports[{slot}]={step.port}")
    return lines


def _option_lines(argv: list[str], words: list[str]) -> list[str]:
    """The command's words, one option and its values per line (as the launch script writes them)."""
    lines: list[list[str]] = [[]]
    for index, (arg, word) in enumerate(zip(argv, words, strict=True)):
        if arg.startswith("-") and index > 0 and lines[-1]:
            lines.append([])
        lines[-1].append(word)
    return [" ".join(line) for line in lines]


def _settings(settings: SlurmSection) -> list[tuple[str, str]]:
    given = (("partition", settings.partition), ("time", settings.time), ("account", settings.account))
    return [(option, value) for option, value in given if value]
