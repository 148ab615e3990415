"""Atomic writes of rendered files, and removal of the files a previous render left behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from profilekit.errors import UsageError
from profilekit.render import MANIFEST, Rendered


def _previous_files(out_dir: Path) -> set[str]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        return {str(item["path"]) for item in data.get("files", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def _write_atomic(path: Path, text: str, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def keep_other_files(out_dir: Path, files: dict[str, Rendered]) -> dict[str, Rendered]:
    """`files` of a partial render (`--role R`) with a manifest that still lists the files it leaves alone.

    The previous manifest's other entries are kept when it was written for the same stack; for another stack
    the manifest lists only this render's files (the others stay on disk, unlisted, so none is removed later).
    """
    try:
        previous = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        same = previous["stack"] == json.loads(files[MANIFEST].text)["stack"]
        kept = [item for item in previous["files"] if same and str(item["path"]) not in files]
    except (OSError, ValueError, TypeError, KeyError):
        return files
    data = json.loads(files[MANIFEST].text)
    data["files"] = sorted([*data["files"], *kept], key=lambda item: str(item["path"]))
    return {**files, MANIFEST: Rendered(json.dumps(data, indent=2, ensure_ascii=False) + "\n")}


def write_outputs(out_dir: Path, files: dict[str, Rendered], *, partial: bool = False) -> list[Path]:
    """Write every file atomically (the manifest last) and remove stale files of the last render.

    A `partial` render (one role) removes nothing and keeps the other files in the manifest.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out_dir, prefix=".profilekit-probe.", delete=True)  # noqa: SIM115
        probe.close()
    except OSError as exc:
        raise UsageError(
            f"cannot write to output folder {out_dir}: {exc.strerror or exc}",
            hint="choose another folder with --out",
        ) from None
    if partial:
        files = keep_other_files(out_dir, files)
    stale = set() if partial else _previous_files(out_dir) - set(files)
    written: list[Path] = []
    try:
        for name in sorted(files, key=lambda n: n == MANIFEST):
            item = files[name]
            target = out_dir / name
            _write_atomic(target, item.text, item.mode)
            written.append(target)
    except OSError as exc:
        raise UsageError(f"cannot write {out_dir / name}: {exc.strerror or exc}", hint="check the folder") from None
    for name in sorted(stale):
        candidate = out_dir / name
        # only plain names inside the folder: a tampered manifest must not delete elsewhere
        if "/" in name or name.startswith(".") or candidate.parent != out_dir:
            continue
        candidate.unlink(missing_ok=True)
    return written
