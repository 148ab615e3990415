"""Where each rendered argument and env entry of a role came from: its words and the locations that set them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.quoting import shell_quote
from profilekit.records import record
from profilekit.vllm.argv import option_args

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig
    from profilekit.errors import Location
    from profilekit.vllm.catalogue import Catalogue


@record(frozen=True, slots=True)
class Provenance:
    """One argument (its words, quoted as the launch script writes them) or env entry, and its origins."""

    text: str
    key: str  # the effective key: serve.max_num_seqs, env.HF_TOKEN, command
    origins: tuple[Location, ...]  # one per leaf: a JSON option's table has one per key set


def role_provenance(role: RoleConfig, catalogue: Catalogue | None) -> list[Provenance]:
    """The role's command line, option by option in rendered order, then its env entries.

    A secret shows as a reference only: the name and where it is declared, never a value.
    """
    items: list[Provenance] = []
    if role.command is not None:
        items.append(Provenance(_words(role.command), "command", tuple(role.origins("command"))))
    else:
        serve = role.serve
        if "model" in serve:
            items.append(Provenance(_words(["vllm", "serve", str(serve["model"])]), "serve.model", _at(role, "model")))
        for dest, value in serve.items():
            if dest == "model":
                continue
            words = option_args(dest, value, catalogue)
            text = _words(words) if words else "(no argument: vLLM's default is this value)"
            items.append(Provenance(text, f"serve.{dest}", _at(role, dest)))
    for name, value in role.env.items():
        if isinstance(value, dict):
            text = f"{name} (secret: exported from the launching environment, never written)"
        else:
            text = f"{name}={shell_quote(value)}"
        items.append(Provenance(text, f"env.{name}", tuple(role.origins("env", name))))
    return items


def _at(role: RoleConfig, dest: str) -> tuple[Location, ...]:
    return tuple(role.origins("serve", dest))


def _words(words: list[str]) -> str:
    return " ".join(shell_quote(word) for word in words)
