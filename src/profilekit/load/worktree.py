"""The git work tree a profile repository is in, found without running git: the paths CI formats print.

GitHub attaches an annotation (`--format github`) or a code-scanning alert (`--format sarif`) to a path relative
to the root of the checkout; a profile repository may be a folder inside it (`profilekit --repo deploy lint`).
"""

from __future__ import annotations

from pathlib import Path

from profilekit.cache.record import probe

GIT = ".git"


def work_tree_root(start: Path) -> Path | None:
    """The root of the git work tree that holds `start`: the nearest folder at or above it with a `.git` folder
    (that holds `HEAD`) or a `.git` file that says `gitdir:` (a linked worktree, a submodule); None outside git.

    A `.git` that is neither is passed over, as git passes it over. `GIT_DIR` and `GIT_WORK_TREE` are not read:
    a checkout that CI annotates has its `.git` at its root.
    """
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        marker = candidate / GIT
        probe(marker)  # a repeat run answered from the cache holds only while no .git appears or goes
        try:
            if marker.is_dir():
                probe(marker / "HEAD")
                if (marker / "HEAD").is_file():
                    return candidate
            elif marker.is_file():
                with marker.open("rb") as file:
                    if file.read(7) == b"gitdir:":
                        return candidate
        except OSError:  # unreadable: not a work tree git could use either
            continue
    return None


def path_in_work_tree(root: Path) -> str:
    """`deploy/` for a profile repository at `deploy` of its git work tree; `` at the root of one, or outside git
    (where the profile repository's own folder is the only root there is)."""
    top = work_tree_root(root)
    if top is None:
        return ""
    inside = root.resolve().relative_to(top).as_posix()
    return "" if inside == "." else inside + "/"
