"""Flag catalogues: every `vllm serve` option of one release, generated from vLLM's own parser."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

_BOOL_ACTIONS = {
    "EnableDisableAction",
    "BooleanOptionalAction",
    "_StoreTrueAction",
    "_StoreFalseAction",
    "StoreBoolean",
}


@dataclass(frozen=True, slots=True)
class Flag:
    """One argparse action of `vllm serve`."""

    dest: str
    option_strings: tuple[str, ...]
    accepted: tuple[str, ...]
    type: str | None
    choices: tuple[Any, ...] | None
    default: Any
    nargs: Any
    action: str
    deprecated: bool
    help: str
    group: str
    enum_members: tuple[str, ...] | None

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Flag:
        enum = raw.get("enum_after_parse") or {}
        return cls(
            dest=raw["dest"],
            option_strings=tuple(raw.get("option_strings") or ()),
            accepted=tuple(raw.get("accepted_option_strings") or raw.get("option_strings") or ()),
            type=raw.get("type"),
            choices=tuple(raw["choices"]) if raw.get("choices") is not None else None,
            default=raw.get("default"),
            nargs=raw.get("nargs"),
            action=raw.get("action") or "_StoreAction",
            deprecated=bool(raw.get("deprecated")),
            help=raw.get("help_first_line") or "",
            group=raw.get("group") or "",
            enum_members=tuple(enum["member_names"]) if enum.get("member_names") else None,
        )

    @property
    def is_bool(self) -> bool:
        return self.action in _BOOL_ACTIONS or self.type == "bool"

    @property
    def is_append(self) -> bool:
        return self.action == "_AppendAction"

    @property
    def takes_many(self) -> bool:
        return self.nargs in ("+", "*") or (isinstance(self.nargs, int) and self.nargs > 1)

    @property
    def is_json(self) -> bool:
        return bool(self.type) and "json" in str(self.type)

    @property
    def option(self) -> str:
        """The long option string rendered for a value: the one spelled like the dest if it exists."""
        natural = "--" + self.dest.replace("_", "-")
        if natural in self.option_strings:
            return natural
        longs = [o for o in self.option_strings if o.startswith("--")]
        return longs[0] if longs else self.option_strings[0]

    @property
    def true_option(self) -> str | None:
        if self.action == "_StoreFalseAction":
            return None
        natural = "--" + self.dest.replace("_", "-")
        if natural in self.accepted:
            return natural
        positives = [o for o in self.option_strings if not o.startswith("--no-")]
        return positives[0] if positives else None

    @property
    def false_option(self) -> str | None:
        """The visible option string that sets the dest to false; None for a store-true flag."""
        if self.action == "_StoreTrueAction":
            return None
        true = self.true_option
        for pool in (self.option_strings, self.accepted):
            for option in pool:
                if option != true and option.startswith("--"):
                    return option
        return None


class Catalogue:
    """The flags of one vLLM release, looked up by dest or by any accepted option string."""

    def __init__(self, version: str, flags: list[Flag]) -> None:
        self.version = version
        self.flags = {f.dest: f for f in flags if f.option_strings}
        self.positional = [f for f in flags if not f.option_strings]
        self.by_option: dict[str, Flag] = {}
        for f in flags:
            for option in f.accepted:
                self.by_option.setdefault(option, f)

    def flag(self, dest: str) -> Flag | None:
        return self.flags.get(dest)

    def resolve(self, key: str) -> Flag | None:
        """A `serve` key: the dest (dashes or underscores), a long option without `--`, or a short alias."""
        found = self.flags.get(key.replace("-", "_"))
        if found is not None:
            return found
        for option in ("--" + key, "--" + key.replace("_", "-"), "-" + key):
            found = self.by_option.get(option)
            if found is not None:
                return found
        return None


def catalogue_path(version: str) -> Any:
    return resources.files("profilekit.vllm").joinpath("catalogues", f"vllm-{version}.json")


@cache
def load_catalogue(version: str) -> Catalogue | None:
    """The shipped catalogue of `version`, or None when this build ships none for it."""
    path = catalogue_path(version)
    if not path.is_file():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Catalogue(version, [Flag.from_json(entry) for entry in raw])
