#!/usr/bin/env python3
"""Round trips through vLLM's real parser, and the results file of each release.

Render round trip: every example stack and role of this repository's `profiles/`, and a seeded corpus
of layer compositions (tools/corpus.py), are composed and rendered by profilekit; vLLM's parser must
read the rendered argv back to exactly the composed values, field by field (JSON options as dicts),
and leave every option that was not composed at its default.

Import round trip: every `vllm serve` launch of launch-examples.md (tests/data/launches) and a seeded
corpus of command lines are imported, composed and rendered; vLLM's parser must read the rendered argv
to the same namespace as the original command line.

`python3 tools/oracle_report.py --versions 0.27.0 0.33.0` (or `--all`) runs both for each release and
writes tests/oracle/results/roundtrip-X.json with the cases, agreements and every disagreement with its
reason. tests/oracle/test_roundtrip.py and test_import_roundtrip.py run the same checks under pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT / "src", REPO_ROOT, REPO_ROOT / "tools"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from corpus import DEFAULT_SEED, NOT_GENERATED, config_corpus, launch_corpus, layer_corpus  # noqa: E402

from profilekit.errors import FindingsError, UsageError  # noqa: E402
from profilekit.importing.launch import import_launch, write_layer  # noqa: E402
from profilekit.importing.shellwords import ShellError, split_commands  # noqa: E402
from profilekit.rules.options import option_findings  # noqa: E402
from profilekit.session import Session  # noqa: E402
from profilekit.vllm.argv import render_argv  # noqa: E402
from profilekit.vllm.catalogue import Catalogue, load_catalogue, parsed  # noqa: E402
from profilekit.vllm.cmdline import SECRET_OPTIONS  # noqa: E402

RESULTS = REPO_ROOT / "tests" / "oracle" / "results"
LAUNCHES = REPO_ROOT / "tests" / "data" / "launches"
LAYER_CORPUS = 500
LAUNCH_CORPUS = 200
CONFIG_CORPUS = 100
_ABSENT = "<absent>"


class Oracle(Protocol):
    def parse(self, argv: list[str]) -> dict[str, Any]: ...


@dataclass
class Outcome:
    """The figures of one round trip."""

    cases: int = 0
    agreements: int = 0
    disagreements: list[dict[str, str]] = field(default_factory=list)
    # agreements where vLLM and profilekit both refuse the input (listed, with both reasons)
    refused_by_both: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    # the options (dests) that agreeing cases set
    covered: set[str] = field(default_factory=set)

    def agree(self, case: str = "", *, both_refuse: str = "") -> None:
        self.cases += 1
        self.agreements += 1
        if both_refuse:
            self.refused_by_both.append({"case": case, "reason": both_refuse})

    def disagree(self, case: str, reason: str) -> None:
        self.cases += 1
        self.disagreements.append({"case": case, "reason": reason})

    def skip(self, case: str, reason: str) -> None:
        self.skipped.append({"case": case, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "agreements": self.agreements,
            "disagreements": self.disagreements,
            "refused_by_both": self.refused_by_both,
            "skipped": self.skipped,
            "options_exercised": len(self.covered),
        }


def same(a: Any, b: Any) -> bool:
    """Equal values of the same JSON type (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


class Baselines:
    """vLLM's namespace for a bare `vllm serve MODEL`, per model (what untouched options must keep)."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self._cache: dict[str | None, dict[str, Any]] = {}

    def get(self, model: str | None) -> dict[str, Any]:
        if model not in self._cache:
            answer = self.oracle.parse([model] if model is not None else [])
            if not answer.get("ok"):
                raise RuntimeError(f"vLLM refuses a bare `vllm serve {model}`: {answer}")
            self._cache[model] = answer["namespace"]
        return self._cache[model]


def compare_render(
    catalogue: Catalogue, serve: dict[str, Any], answer: dict[str, Any], baseline: dict[str, Any]
) -> list[str]:
    """Why vLLM's namespace differs from the composed `serve` table (empty: it does not)."""
    if not answer.get("ok"):
        return [f"vLLM refuses the rendered argv: {answer.get('error')}"]
    ns = answer["namespace"]
    problems: list[str] = []
    model = serve.get("model")
    if ns.get("model_tag") != model:
        problems.append(f"model: composed {model!r}, vLLM's positional model is {ns.get('model_tag')!r}")
    for dest, flag in sorted(catalogue.flags.items()):
        if dest == "model":
            continue
        got = ns.get(dest, _ABSENT)
        if dest in serve:
            want = parsed(flag, serve[dest])
            if not same(want, got):
                problems.append(
                    f"{dest}: composed {_short(serve[dest])} should parse as {_short(want)}, vLLM has {_short(got)}"
                )
        elif not same(got, baseline.get(dest, _ABSENT)):
            problems.append(
                f"{dest}: not composed, yet vLLM has {_short(got)} instead of {_short(baseline.get(dest, _ABSENT))}"
            )
    return problems


def _render_role(
    outcome: Outcome,
    case: str,
    *,
    session: Session,
    spec: str,
    oracle: Oracle,
    baselines: Baselines,
    expected: dict[str, dict[str, Any]] | None = None,
    via_config: Path | None = None,
) -> None:
    """One stack's vLLM roles: rendered argv (or, with `via_config`, the vllm-config file) against vLLM's parse."""
    catalogue = session.catalogue
    assert catalogue is not None
    try:
        stack = session.stack(spec)
    except FindingsError as exc:
        outcome.disagree(case, "the stack does not load: " + "; ".join(f.message for f in exc.findings))
        return
    errors = [f for f in option_findings(stack, catalogue) if f.is_error]
    if errors and expected is None:
        outcome.skip(case, f"not a valid stack for vLLM {catalogue.version}: " + "; ".join(f.message for f in errors))
        return
    for name, role in stack.roles.items():
        if not role.is_vllm:
            continue
        label = f"{case} [{name}]"
        serve = role.serve
        if expected is not None:
            if errors:
                outcome.disagree(label, "profilekit rejects valid values: " + "; ".join(f.message for f in errors))
                continue
            if not same(serve, expected[name]):
                outcome.disagree(
                    label, f"composition gives {_short(serve)}, DESIGN section 5 gives {_short(expected[name])}"
                )
                continue
        argv = render_argv(serve, catalogue)
        answer = oracle.parse(argv)
        if via_config is not None:
            argv, config_answer = _parse_config(oracle, via_config, stack, name, catalogue)
            if "multinode-unrenderable" in str(config_answer.get("error", "")):
                # a role that spans nodes: the vllm-config target's R.sh starts one host, so render refuses it
                outcome.skip(label, str(config_answer["error"]))
                continue
            problems = compare_render(catalogue, serve, config_answer, baselines.get(serve.get("model")))
            if not problems and answer.get("ok"):
                problems = compare_namespaces(answer["namespace"], config_answer["namespace"])
        else:
            problems = compare_render(catalogue, serve, answer, baselines.get(serve.get("model")))
        if problems:
            outcome.disagree(label, f"argv {_short(argv)}: " + " | ".join(problems))
        else:
            outcome.agree()
            outcome.covered.update(serve)


def _parse_config(oracle: Oracle, folder: Path, stack: Any, role: str, catalogue: Catalogue) -> tuple[list[str], Any]:
    """Render the role's `--target vllm-config` file into `folder`; vLLM's parse of `MODEL --config FILE`."""
    from profilekit.render.context import VLLM_CONFIG
    from profilekit.render.stack import render_stack

    files, problems = render_stack(
        stack, version=catalogue.version, catalogue=catalogue, roles=[role], targets=(VLLM_CONFIG,)
    )
    if problems:
        return [], {"ok": False, "error": "render refuses: " + "; ".join(f"{p.rule}: {p.message}" for p in problems)}
    path = folder / f"{role}.yaml"
    path.write_text(files[path.name].text, encoding="utf-8")
    argv = [str(stack.roles[role].serve["model"]), "--config", str(path)]
    return argv, oracle.parse(argv)


def example_stacks(session: Session) -> list[str]:
    """Every non-abstract layer of the repository, and the stacks [lint] names."""
    specs: list[str] = []
    for name in session.layers.files:
        layer, _ = session.layers.get(name)
        if layer is not None and not layer.data.layer.abstract:
            specs.append(name)
    return specs + [s for s in session.config.lint.stacks if s not in specs]


def render_profiles(
    version: str, oracle: Oracle, baselines: Baselines | None = None, *, via_config: Path | None = None
) -> Outcome:
    """The render round trip over this repository's own profiles (through config files in `via_config`)."""
    outcome = Outcome()
    session = Session.open(repo=REPO_ROOT, vllm_version=version)
    baselines = baselines or Baselines(oracle)
    for spec in example_stacks(session):
        _render_role(
            outcome,
            f"profiles: {spec}",
            session=session,
            spec=spec,
            oracle=oracle,
            baselines=baselines,
            via_config=via_config,
        )
    return outcome


def _corpus_repo(folder: Path, version: str) -> Path:
    (folder / "profiles").mkdir(parents=True, exist_ok=True)
    (folder / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    return folder


def render_corpus(
    version: str,
    oracle: Oracle,
    *,
    seed: int = DEFAULT_SEED,
    count: int = LAYER_CORPUS,
    baselines: Baselines | None = None,
    via_config: bool = False,
) -> Outcome:
    """The render round trip over a seeded corpus of layer compositions (through vllm-config files)."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    outcome = Outcome()
    baselines = baselines or Baselines(oracle)
    cases = layer_corpus(catalogue, seed=seed, count=count)
    with tempfile.TemporaryDirectory(prefix="profilekit-corpus-") as tmp:
        root = _corpus_repo(Path(tmp), version)
        for case in cases:
            for layer in case.layers:
                path = root / "profiles" / f"{layer.name}.toml"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(layer.text, encoding="utf-8")
        session = Session.open(repo=root, vllm_version=version)
        for case in cases:
            _render_role(
                outcome,
                f"corpus {case.spec}",
                session=session,
                spec=case.spec,
                oracle=oracle,
                baselines=baselines,
                expected=case.expected,
                via_config=root if via_config else None,
            )
    return outcome


# ---- import round trip -----------------------------------------------------------------------------


def _effective(ns: dict[str, Any]) -> dict[str, Any]:
    """A namespace as `vllm serve` uses it: the model from the positional or from --model / config."""
    out = dict(ns)
    tag = out.pop("model_tag", None)
    if tag is not None:
        out["model"] = tag
    out.pop("config", None)
    return out


def compare_namespaces(original: dict[str, Any], imported: dict[str, Any]) -> list[str]:
    a, b = _effective(original), _effective(imported)
    problems = []
    for key in sorted(set(a) | set(b)):
        if not same(a.get(key, _ABSENT), b.get(key, _ABSENT)):
            problems.append(f"{key}: original {_short(a.get(key, _ABSENT))}, imported {_short(b.get(key, _ABSENT))}")
    return problems


def launch_examples() -> list[tuple[str, Path]]:
    return [(path.stem, path) for path in sorted(LAUNCHES.glob("*.sh"))]


def _script_args(path: Path) -> list[str]:
    """The words after `vllm serve` in a launch script, with --config made absolute for the oracle."""
    import re

    for command in split_commands(path.read_text(encoding="utf-8")):
        if command.problems:  # what only a shell could evaluate: profilekit import refuses it too
            raise ShellError("; ".join(problem.message for problem in command.problems))
        words = list(command.words)
        while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in ("exec", "env")):
            words.pop(0)
        if len(words) >= 2 and Path(words[0]).name == "vllm" and words[1] == "serve":
            args = words[2:]
            return [
                str(path.parent / arg) if index > 0 and args[index - 1] == "--config" else arg
                for index, arg in enumerate(args)
            ]
    raise ValueError(f"{path}: no vllm serve command")


def _import_one(
    outcome: Outcome,
    case: str,
    *,
    root: Path,
    name: str,
    words: list[str],
    original_args: list[str],
    catalogue: Catalogue,
    oracle: Oracle,
    cwd: Path,
    must_import: bool,
) -> None:
    original = oracle.parse(original_args)
    try:
        imported = import_launch(root, words, name=name, catalogue=catalogue, cwd=cwd)
    except UsageError as exc:
        if not original.get("ok"):
            outcome.agree(case, both_refuse=f"vLLM {catalogue.version}: {original.get('error')}; import: {exc.message}")
        elif must_import:
            outcome.disagree(case, f"vLLM accepts it, import refuses: {exc.message}")
        else:
            outcome.skip(case, f"import refuses what it cannot represent: {exc.message}")
        return
    if not original.get("ok"):
        outcome.disagree(case, f"import accepts what vLLM {catalogue.version} refuses: {original.get('error')}")
        return
    write_layer(root, imported)
    session = Session.open(repo=root, vllm_version=catalogue.version)
    try:
        stack = session.stack(name)
    except FindingsError as exc:
        outcome.disagree(case, "the imported layer does not load: " + "; ".join(f.message for f in exc.findings))
        return
    errors = [f.message for f in option_findings(stack, catalogue) if f.is_error]
    if errors:
        outcome.disagree(case, "profilekit rejects the imported layer: " + "; ".join(errors))
        return
    argv = render_argv(stack.roles["serve"].serve, catalogue)
    rendered = oracle.parse(argv)
    if not rendered.get("ok"):
        outcome.disagree(case, f"vLLM refuses the rendered argv {_short(argv)}: {rendered.get('error')}")
        return
    problems = compare_namespaces(original["namespace"], rendered["namespace"])
    if problems:
        outcome.disagree(case, f"original {_short(original_args)} vs rendered {_short(argv)}: " + " | ".join(problems))
    else:
        outcome.agree()
        outcome.covered.update(imported.serve)


def import_examples(version: str, oracle: Oracle) -> Outcome:
    """The import round trip over every launch example (those vLLM `version` accepts)."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="profilekit-import-") as tmp:
        root = _corpus_repo(Path(tmp), version)
        for stem, path in launch_examples():
            try:
                original_args = _script_args(path)
            except ShellError as exc:
                outcome.skip(
                    f"launch {stem}", f"only a shell can run it as written ({exc}); the -filled copy is tested"
                )
                continue
            _import_one(
                outcome,
                f"launch {stem}",
                root=root,
                name=f"ex/{stem}",
                words=[path.name],
                original_args=original_args,
                catalogue=catalogue,
                oracle=oracle,
                cwd=path.parent,
                must_import=False,
            )
    return outcome


def import_corpus(version: str, oracle: Oracle, *, seed: int = DEFAULT_SEED, count: int = LAUNCH_CORPUS) -> Outcome:
    """The import round trip over a seeded corpus of command lines."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="profilekit-import-") as tmp:
        root = _corpus_repo(Path(tmp), version)
        for index, args in enumerate(launch_corpus(catalogue, seed=seed, count=count)):
            _import_one(
                outcome,
                f"launch corpus #{index}",
                root=root,
                name=f"lc/{index:03d}",
                words=["vllm", "serve", *args],
                original_args=args,
                catalogue=catalogue,
                oracle=oracle,
                cwd=root,
                must_import=True,
            )
    return outcome


def import_config_corpus(
    version: str, oracle: Oracle, *, seed: int = DEFAULT_SEED, count: int = CONFIG_CORPUS
) -> Outcome:
    """The import round trip over seeded `vllm serve --config FILE.yaml` launches (vLLM reads them with PyYAML)."""
    catalogue = load_catalogue(version)
    assert catalogue is not None
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="profilekit-import-") as tmp:
        root = _corpus_repo(Path(tmp), version)
        for index, (text, cli) in enumerate(config_corpus(catalogue, seed=seed, count=count)):
            config = root / f"config-{index:03d}.yaml"
            config.write_text(text, encoding="utf-8")
            args = [*cli, "--config", config.name]
            _import_one(
                outcome,
                f"config corpus #{index}",
                root=root,
                name=f"cc/{index:03d}",
                words=["vllm", "serve", *args],
                original_args=[*cli, "--config", str(config)],
                catalogue=catalogue,
                oracle=oracle,
                cwd=root,
                must_import=True,
            )
    return outcome


def report(version: str, oracle: Oracle, *, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    baselines = Baselines(oracle)
    profiles = render_profiles(version, oracle, baselines)
    corpus = render_corpus(version, oracle, seed=seed, baselines=baselines)
    examples = import_examples(version, oracle)
    launches = import_corpus(version, oracle, seed=seed)
    configs = import_config_corpus(version, oracle, seed=seed)
    catalogue = load_catalogue(version)
    assert catalogue is not None
    outcomes = (profiles, corpus, examples, launches, configs)
    total = sum(o.cases for o in outcomes)
    agreed = sum(o.agreements for o in outcomes)
    return {
        "vllm_version": version,
        "generated_by": "python3 tools/oracle_report.py --versions " + version,
        "seed": seed,
        "summary": {"cases": total, "agreements": agreed, "disagreements": total - agreed},
        "render_roundtrip": {
            "profiles": profiles.as_dict(),
            "corpus": {"compositions": LAYER_CORPUS, **corpus.as_dict()},
        },
        "import_roundtrip": {
            "launch_examples": examples.as_dict(),
            "corpus": {"command_lines": LAUNCH_CORPUS, **launches.as_dict()},
            "config_files": {"yaml_files": CONFIG_CORPUS, **configs.as_dict()},
        },
        "options_not_generated": NOT_GENERATED,
        "options_not_in_the_import_corpus": dict.fromkeys(
            sorted(SECRET_OPTIONS), "a credential: import refuses it by design (use the environment)"
        ),
        "options_in_catalogue": len(catalogue.flags),
    }


def iter_versions(args: argparse.Namespace) -> Iterator[str]:
    from profilekit.vllm.versions import SUPPORTED

    yield from (SUPPORTED if args.all else args.versions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true", help="every supported release")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    from tests.oracle.oracle_client import OracleWorker

    failed = False
    RESULTS.mkdir(parents=True, exist_ok=True)
    for version in iter_versions(args):
        with OracleWorker(version) as oracle:
            data = report(version, oracle, seed=args.seed)
        out = RESULTS / f"roundtrip-{version}.json"
        out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        summary = data["summary"]
        print(f"vLLM {version}: {summary['agreements']}/{summary['cases']} agree -> {out.relative_to(REPO_ROOT)}")
        failed = failed or summary["disagreements"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
