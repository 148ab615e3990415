"""`profilekit init`: the files of a new profile repository, and writing them all or none, never over a file."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit import __version__
from profilekit.errors import UsageError
from profilekit.load.schema import dumps, layer_schema
from profilekit.output import Rendered, write_temp
from profilekit.render.context import builtin_templates

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue

SCHEMA_FILE = "profilekit.schema.json"  # .taplo.toml (templates/init/dot-taplo.toml) names it
# the scaffold is package data (templates/init/), with these words replaced; a file named `dot-X` is written `.X`
# (a `.gitignore` or `.pre-commit-config.yaml` inside this repository's templates/ would act on this repository)
_VERSION_MARK = "@VLLM_VERSION@"
_PROFILEKIT_MARK = "@PROFILEKIT_VERSION@"
_DOT = "dot-"


def scaffold_dir() -> Path:
    return builtin_templates() / "init"


def scaffold_files(catalogue: Catalogue) -> dict[str, str]:
    """Every file `init` writes for the release of `catalogue`: path relative to the new repository -> text."""
    source = scaffold_dir()
    files: dict[str, str] = {}
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        parts = [
            part.replace(_DOT, ".", 1) if part.startswith(_DOT) else part for part in path.relative_to(source).parts
        ]
        text = path.read_text(encoding="utf-8")
        files["/".join(parts)] = text.replace(_VERSION_MARK, catalogue.version).replace(_PROFILEKIT_MARK, __version__)
    files[SCHEMA_FILE] = dumps(layer_schema(catalogue))
    return dict(sorted(files.items()))


def write_new_files(root: Path, files: dict[str, str], *, shown: str) -> list[Path]:
    """Create every file below `root` (made if missing), or none: an existing one stops the whole write.

    Each file is written in full under a temporary name, then linked to its name, which fails if something
    appeared there meanwhile; any failure removes what this call created. `shown` is `root` as the user
    wrote it, for messages.
    """
    if root.exists() and not root.is_dir():
        raise UsageError(f"{shown} is a file, not a folder", hint="name a new or empty folder: profilekit init DIR")
    present = [name for name in files if os.path.lexists(root / name)]
    if present:
        raise _refusal(shown, present)
    made_dirs: list[Path] = []
    made_files: list[Path] = []
    name = ""
    try:
        for name, text in files.items():
            target = root / name
            for parent in reversed([target.parent, *target.parent.parents]):
                if not parent.exists():
                    parent.mkdir()
                    made_dirs.append(parent)
            tmp = write_temp(target.parent, target.name, Rendered(text))
            try:
                os.link(tmp, target)  # never replaces: FileExistsError if the name was taken meanwhile
                made_files.append(target)
            finally:
                tmp.unlink(missing_ok=True)
    except FileExistsError as exc:
        _remove(made_files, made_dirs)
        raise _refusal(shown, [Path(str(exc.filename2 or exc.filename)).relative_to(root).as_posix()]) from None
    except OSError as exc:
        _remove(made_files, made_dirs)
        raise UsageError(
            f"cannot write {(Path(shown) / name).as_posix()}: {exc.strerror or exc}; nothing was written",
            hint="remove what is in the way, or choose another folder",
        ) from None
    return made_files


def _refusal(shown: str, present: list[str]) -> UsageError:
    count = f"{len(present)} file{'s' if len(present) > 1 else ''}"
    return UsageError(
        f"init never overwrites a file, and {shown} already holds {count} it would write: "
        + ", ".join(present)
        + "; nothing was written",
        hint="run profilekit init in a new or empty folder, or move those files away",
    )


def _remove(files: list[Path], dirs: list[Path]) -> None:
    for path in files:
        path.unlink(missing_ok=True)
    for folder in reversed(dirs):
        with contextlib.suppress(OSError):  # something else was put there meanwhile: leave it
            folder.rmdir()
