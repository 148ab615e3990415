"""The TOML boundary: find the repository, read layer files, validate them, locate every key."""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from profilekit.cache.record import probe
from profilekit.errors import Finding, Location, Severity, UsageError
from profilekit.load.layerdata import LayerFile, RepoConfig, layer_file, repo_config
from profilekit.records import record
from profilekit.tomlio.guards import (
    content_findings,
    could_be_unsafe,
    display_key,
)
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import format_key
from profilekit.tomlio.read import TomlFile, read_toml, toml_type, with_article

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import ValidationError

    from profilekit.vllm.catalogue import Catalogue

T = TypeVar("T")
REPO_MARKER = "profilekit.toml"
PROFILES_DIR = "profiles"


@record(slots=True)
class Layer:
    """A validated layer file; `serve` option names are normalised to vLLM's dest spelling."""

    name: str
    toml: TomlFile
    data: LayerFile
    serve: dict[str, Any]
    role_serve: dict[str, dict[str, Any]]
    # normalised key path -> the path as written in the file (dash spellings, aliases)
    spelling: dict[KeyPath, KeyPath] = field(default_factory=dict)
    # the flag catalogue the keys were resolved with (None: dashes folded only)
    catalogue: Catalogue | None = None
    # `location` answers, kept: every stack the layer is in asks for the same keys (lint composes hundreds)
    _located: dict[KeyPath, Location] = field(default_factory=dict, repr=False, compare=False)
    # facts derived from this layer alone (e.g. its secret-looking values), kept for every stack it is in
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # the source whose layer this is (`[sources.NAME]`); None for a layer of the repository itself
    source: Source | None = None

    def dest(self, key: str) -> str:
        """A `serve` key as vLLM's dest: aliases resolved with the catalogue, else dashes folded."""
        return serve_dest(key, self.catalogue)

    @property
    def file(self) -> str:
        return self.toml.file

    @property
    def sha256(self) -> str:
        return self.toml.sha256

    def location(self, path: KeyPath) -> Location:
        """Where the (normalised) key `path` was written in this layer."""
        known = self._located.get(path)
        if known is None:
            known = self._located[path] = self._locate(path)
        return known

    def _locate(self, path: KeyPath) -> Location:
        written = path
        for depth in range(len(path), 0, -1):
            mapped = self.spelling.get(path[:depth])
            if mapped is not None:
                written = (*mapped, *path[depth:])
                break
        pos = self.toml.pos(written)
        return Location(self.file, pos.line, pos.column, format_key(written), self.name)


def find_repo(start: Path | None, explicit: Path | None) -> Path:
    """The repository root: `--repo`, or the first folder upwards that holds profilekit.toml."""
    if explicit is not None:
        root = Path(os.path.expanduser(explicit)).resolve()  # `~name` of no user stays as written
        probe(root / REPO_MARKER)
        if not (root / REPO_MARKER).is_file():
            raise UsageError(
                f"no {REPO_MARKER} in {explicit}",
                hint="pass the folder that holds profilekit.toml (the repository root)",
            )
        return root
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        probe(folder / REPO_MARKER)
        if (folder / REPO_MARKER).is_file():
            return folder
    raise UsageError(
        f"no profile repository found: no {REPO_MARKER} in {here} or any parent folder",
        hint="run inside a profile repository, pass --repo PATH, or create profilekit.toml at the root of one",
    )


def discover_layers(root: Path) -> dict[str, Path]:
    """Every `profiles/**/*.toml`, by layer name (its path below `profiles/`, without `.toml`), sorted."""
    base = root / PROFILES_DIR
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        folder = Path(dirpath)
        below = folder.relative_to(base).as_posix()
        prefix = "" if below == "." else below + "/"
        for name in sorted(filenames):
            if name.endswith(".toml") and not name.startswith("."):
                found[prefix + name.removesuffix(".toml")] = folder / name
    return dict(sorted(found.items()))


def _env_depth(loc: tuple[Any, ...]) -> int | None:
    """Index of the union tag in an env value's error location (`env.X.<tag>`), if it is one."""
    if len(loc) >= 3 and loc[0] == "env":
        return 2
    if len(loc) >= 5 and loc[0] == "roles" and loc[2] == "env":
        return 4
    return None


def _schema_findings(source: TomlFile, exc: ValidationError, *, rule: str, layer: str = "") -> list[Finding]:
    findings: list[Finding] = []
    seen: set[KeyPath] = set()
    for raw_err in exc.errors(include_url=False):
        err: Any = raw_err
        loc = tuple(err["loc"])
        depth = _env_depth(loc)
        if depth is not None and loc[depth] in ("str", "Secret"):
            # `str | Secret`: one message for the env value, whichever branch failed
            tag = loc[depth]
            loc = loc[:depth] + loc[depth + 1 :]
            is_table = isinstance(err["input"], dict) or (tag == "Secret" and len(loc) > depth)
            if is_table and tag == "str":
                continue
            if not is_table:
                err = {**err, "type": "env_value_type", "loc": loc}
        if loc and loc[-1] == "[key]":  # a dict key failed its pattern: report the key itself
            loc = loc[:-1]
            err = {**err, "type": "bad_name", "loc": loc}
        path: KeyPath = tuple(p for p in loc if isinstance(p, (str, int)))
        if path in seen:
            continue
        seen.add(path)
        pos = source.pos(path)
        key = display_key(path)
        message = _friendly(err)
        findings.append(
            Finding(
                rule,
                Severity.ERROR,
                f"{key}: {message}" if key else message,
                [Location(source.file, pos.line, pos.column, key, layer)],
                fix=_schema_fix(err, path),
            )
        )
    return findings


_TYPE_NAMES = {
    "string": "string",
    "str": "string",
    "bool": "boolean",
    "int": "integer",
    "float": "float",
    "dict": "table",
    "model": "table",
    "list": "array",
    "env_value": "string or { secret = true }",
}


def _friendly(err: Any) -> str:
    kind = err["type"]
    if err["loc"][:2] == ("layer", "ignore"):
        return _ignore_problem(err)
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error" and err["loc"] and err["loc"][-1] == "secret":
        return "must be `secret = true`"
    if kind == "bad_name":
        return _bad_name(err["loc"], err["input"])
    if kind == "string_pattern_mismatch":
        return _bad_reference(err["loc"], err["input"])
    if kind.endswith("_type"):
        base = kind.removesuffix("_type")
        return f"expected {with_article(_TYPE_NAMES.get(base, base))}, got {toml_type(err['input'])}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    return str(err["msg"])


# the form of `[layer] ignore`, shown in the fix of every mistake in it
IGNORE_FORM = 'ignore = {{ "{rule}" = "why its warnings do not apply to this layer" }}'


def _ignore_problem(err: Any) -> str:
    """A mistake in `[layer] ignore`: the table itself (an array of ids), or a rule without its reason."""
    if len(err["loc"]) == 2:
        if isinstance(err["input"], list):
            return "expected a table of rule ids, each with its reason, got an array"
        return f"expected a table of rule ids, each with its reason, got {toml_type(err['input'])}"
    rule = err["loc"][2]
    if isinstance(err["input"], str):
        return (
            f"ignoring {rule!r} needs a reason, and this one is {'empty' if not err['input'] else 'only white space'}"
        )
    return f"ignoring {rule!r} needs a reason (a string), got {toml_type(err['input'])}"


def _ignore_fix(err: Any, path: KeyPath) -> str:
    """The `[layer] ignore` form, with the rule the mistake was about (the first of an array of ids)."""
    rule: Any = path[2] if len(path) > 2 else None
    given = err["input"] if len(path) == 2 else None
    items = given if isinstance(given, list) else [given]
    if rule is None and items and isinstance(items[0], str):
        rule = items[0]
    return "write each ignored rule with its reason: " + IGNORE_FORM.format(rule=rule or "model-facts-missing")


def _bad_reference(loc: tuple[Any, ...], name: str) -> str:
    """A `[layer]` list entry that is no name: layers are paths below profiles/, never outside it."""
    field = loc[1] if len(loc) >= 2 and loc[0] == "layer" else ""
    if field == "extends":
        return f"{name!r} is not a layer name: a layer is named by its path below profiles/ without .toml (site/h100)"
    if field in ("conflicts", "requires"):
        return f"{name!r} is not a layer name (site/h100) or a capability (@kv-connector)"
    if field == "provides":
        return f"{name!r} is not a capability name: letters, digits, '_', '.' and '-', without the '@'"
    if loc[:3] == ("render", "k8s", "secret_name"):
        return f"{name!r} is not a Kubernetes Secret name: lowercase letters, digits, '-' and '.', at most 253"
    if loc[:3] == ("render", "k8s", "secret_keys"):
        return f"{name!r} is not a key of a Kubernetes Secret: letters, digits, '-', '_' and '.'"
    if loc[:3] == ("render", "k8s", "node_selectors"):
        return f"{name!r} is not a Kubernetes label value: {_LABEL_FORM}"
    if loc[:3] == ("render", "slurm", "gres_types"):
        return f"{name!r} is not a SLURM GRES type: letters, digits, '_', '.', '+' and '-' (\"\" for any type)"
    if loc[:2] == ("render", "slurm"):
        return f"{name!r} is not one word sbatch takes: letters, digits and '_', '.', ',', ':', '+', '-'"
    return f"{name!r} is not a valid name"


_LABEL_FORM = "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def _bad_name(loc: tuple[Any, ...], name: str) -> str:
    shown = repr(name)
    if loc[:3] in (("render", "k8s", "node_selectors"), ("render", "slurm", "gres_types")) and len(loc) == 4:
        return f"{shown} is not a GPU name: letters, digits, '_', '.' and '-', starting with a letter or digit"
    if loc[:3] == ("render", "k8s", "node_selectors"):
        return f"{shown} is not a Kubernetes label key: [a DNS subdomain/]a name of {_LABEL_FORM}"
    if loc[0] == "roles" and len(loc) == 2:
        return f"{shown} is not a valid role name: letters, digits, '_', '.' and '-', starting with a letter or digit"
    if "env" in loc[-2:-1]:
        return f"{shown} is not a valid environment variable name: letters, digits and '_', not starting with a digit"
    return f"{shown} is not a valid name"


def _schema_fix(err: Any, path: KeyPath) -> str:
    if path[:2] == ("layer", "ignore") and err["type"] != "extra_forbidden":
        return _ignore_fix(err, path)
    if err["type"] == "bad_name":
        if path[0] == "roles" and len(path) == 2:
            return "rename the role: it names the output files (ROLE.sh, ROLE.env)"
        if path[0] == "render":
            return "write the name as the docs/HARDWARE.md catalogue or your [gpus] spells it" if len(path) == 4 else ""
        return "rename the variable, e.g. MY_VAR_1"
    if err["type"] == "extra_forbidden":
        top = path[0] if path else ""
        if len(path) == 1:
            return "top-level tables are [layer], [model], [serve], [env] and [roles.NAME]"
        if top == "layer":
            return (
                "[layer] keys are description, extends, group, provides, conflicts, requires, abstract, unset, ignore"
            )
        if top == "roles":
            return "a role table holds serve, env and command"
        return "remove the key or check its spelling"
    if (path and path[0] in {"env"}) or (len(path) > 2 and path[0] == "roles" and path[2] == "env"):
        return 'env values are strings (quote numbers: "1") or { secret = true }'
    return ""


def serve_dest(key: str, catalogue: Catalogue | None) -> str:
    """The dest a `serve` key names: `tp`, `tensor-parallel-size` -> `tensor_parallel_size`."""
    if catalogue is not None:
        flag = catalogue.resolve(key)
        if flag is not None:
            return flag.dest
    return key.replace("-", "_")


def _normalise_serve(
    source: TomlFile,
    layer: str,
    prefix: KeyPath,
    serve: dict[str, Any],
    spelling: dict[KeyPath, KeyPath],
    *,
    catalogue: Catalogue | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """`tp`, `tensor-parallel-size` and `tensor_parallel_size` are one option; writing two is an error.

    Without a catalogue only dashes and underscores are folded; with one, short aliases and every
    option string of a flag name its dest too.
    """
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    findings: list[Finding] = []
    for key, value in serve.items():
        norm = serve_dest(key, catalogue)
        if norm in written:
            first = source.pos((*prefix, written[norm]))
            second = source.pos((*prefix, key))
            findings.append(
                Finding(
                    "duplicate-option",
                    Severity.ERROR,
                    f"{format_key((*prefix, norm))}: the option is written twice, as {written[norm]!r} and {key!r}",
                    [
                        Location(source.file, second.line, second.column, format_key((*prefix, key)), layer),
                        Location(source.file, first.line, first.column, format_key((*prefix, written[norm])), layer),
                    ],
                    fix=f"keep one spelling of {norm!r} in this layer",
                )
            )
            continue
        written[norm] = key
        out[norm] = value
        if norm != key:
            spelling[(*prefix, norm)] = (*prefix, key)
    return out, findings


def load_layer(
    root: Path, name: str, path: Path, catalogue: Catalogue | None = None, prefix: str = ""
) -> tuple[Layer | None, list[Finding]]:
    """Read, parse and validate one layer file. Never raises for a user mistake.

    With a flag catalogue, `serve` keys written as aliases or option strings become dests.
    A valid file is read without pydantic (layerdata.py); only a file it refuses is validated by the
    models, whose errors become the findings.
    """
    source, raw, findings = read_toml(root, path, prefix)
    if source is None or raw is None:
        for f in findings:
            f.locations = [Location(loc.file, loc.line, loc.column, loc.key, name) for loc in f.locations]
        return None, findings
    unsafe = (
        content_findings(raw, source.pos, file=source.file, rule="invalid-layer", layer=name)
        if could_be_unsafe(source.text)
        else []
    )
    if unsafe:
        return None, unsafe
    data, refused = _validated(source, raw, layer_file, "LayerFile", rule="invalid-layer", layer=name)
    if data is None:
        return None, refused
    spelling: dict[KeyPath, KeyPath] = {}
    serve, problems = _normalise_serve(source, name, ("serve",), data.serve, spelling, catalogue=catalogue)
    role_serve: dict[str, dict[str, Any]] = {}
    for role, spec in data.roles.items():
        role_serve[role], more = _normalise_serve(
            source, name, ("roles", role, "serve"), spec.serve, spelling, catalogue=catalogue
        )
        problems += more
    return Layer(name, source, data, serve, role_serve, spelling, catalogue), problems


def load_repo_config(root: Path, prefix: str = "") -> tuple[RepoConfig, TomlFile | None, list[Finding]]:
    """Read and validate profilekit.toml: without pydantic when it is valid, as `load_layer` does."""
    source, raw, findings = read_toml(root, root / REPO_MARKER, prefix)
    if source is None or raw is None:
        return RepoConfig(), None, findings
    unsafe = content_findings(raw, source.pos, file=source.file, rule="invalid-config")
    if unsafe:
        return RepoConfig(), source, unsafe
    config, refused = _validated(source, raw, repo_config, "RepoConfig", rule="invalid-config")
    return (config if config is not None else RepoConfig()), source, refused


def _validated(
    source: TomlFile, raw: object, fast: Callable[[object], T | None], model: str, *, rule: str, layer: str = ""
) -> tuple[T | None, list[Finding]]:
    """`raw` as `fast` (a layerdata validator) reads it; when `fast` refuses it, as the pydantic model `model` of
    models.py reads it (None and its errors as `rule` findings: the schema of record words every mistake)."""
    data = fast(raw)
    if data is not None:
        return data, []
    from pydantic import ValidationError  # noqa: PLC0415 - pydantic only to word what is wrong with a file layerdata refuses

    from profilekit.load import models  # noqa: PLC0415 - pydantic only to word what is wrong with a file layerdata refuses

    try:
        return models.plain(getattr(models, model).model_validate(raw)), []
    except ValidationError as exc:
        return None, _schema_findings(source, exc, rule=rule, layer=layer)


@record(frozen=True, slots=True)
class Source:
    """A `[sources.NAME]` repository at its locked commit, its files in `tree` (sources/ opens it): the `source`
    of each of its layers."""

    name: str
    git: str  # as profilekit.toml writes it
    rev: str
    commit: str
    hash: str
    tree: Path

    @property
    def label(self) -> str:
        """`platform@3f2a9c1`: how files of the source are named in every message."""
        return source_label(self.name, self.commit)

    @property
    def prefix(self) -> str:
        """What a file of the source is named after: `platform@3f2a9c1:` (then `profiles/base.toml`)."""
        return f"{self.label}:"


def source_label(name: str, commit: str) -> str:
    return f"{name}@{commit[:7]}"
