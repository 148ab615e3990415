"""`vllm serve --config FILE.yaml`: a small reader for the YAML vLLM's docs use, expanded as vLLM expands it.

PyYAML is not a dependency of profilekit, so this reads the subset that `vllm serve` config files use
(vLLM docs `configuration/serve_args.md`, recipes): a mapping of option names to plain or quoted
scalars, flow lists `[a, b]`, block lists (`- a`), and nested mappings (JSON-valued options). Scalars
resolve as PyYAML's `safe_load` resolves them (YAML 1.1: `yes`/`on` are booleans too). Anything else
(anchors, tags, block strings, flow mappings, octal or sexagesimal numbers, ...) is refused with the line,
never guessed. `config_args` then turns the mapping into argv words exactly as `vllm serve` does
(`FlexibleArgumentParser.load_config_file`, vllm/utils/argparse_utils.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

_BOOL_TRUE = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_BOOL_FALSE = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_NULL = {"", "~", "null", "Null", "NULL"}
_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*([eE][-+][0-9]+)?|[-+]?\.[0-9]+([eE][-+][0-9]+)?")
# forms YAML 1.1 gives other meanings (octal, hex, binary, sexagesimal, underscores, .inf): refused
_AMBIGUOUS = re.compile(
    r"[-+]?0[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?"
    r"|[-+]?[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)
# YAML 1.1 timestamps (PyYAML makes dates and datetimes of them)
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?"
    r"([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?"
)
# a plain key (any text up to `: `, not starting with a YAML indicator), or a quoted one
_KEY = re.compile(
    r"""^((?:[^\s\-?:,\[\]{}#&*!|>'"%@`]|[-?:](?=\S))[^#]*?|"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')\s*:(?:\s|$)"""
)


class YamlError(ValueError):
    """A config file outside the subset: the message names the line."""


def _strip_comment(text: str) -> str:
    """Remove a ` # comment` outside quotes (a double-quoted string may hold escaped quotes)."""
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote == '"' and char == "\\":
            index += 2
            continue
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'" and (index == 0 or text[index - 1] in " \t[,:"):
            quote = char
        elif char == "#" and (index == 0 or text[index - 1] in " \t"):
            return text[:index].rstrip()
        index += 1
    return text.rstrip()


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "\0", "r": "\r"}


def _quoted(text: str, line: int) -> str:
    if text[0] == "'":
        if len(text) < 2 or not text.endswith("'"):
            raise YamlError(f"line {line}: unterminated quoted string")
        return text[1:-1].replace("''", "'")
    if len(text) < 2 or not text.endswith('"'):
        raise YamlError(f"line {line}: unterminated quoted string")
    body, out, index = text[1:-1], [], 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            nxt = body[index + 1 : index + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                index += 2
                continue
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[index + 2 : index + 6]):
                out.append(chr(int(body[index + 2 : index + 6], 16)))
                index += 6
                continue
            raise YamlError(f"line {line}: escape \\{nxt} is not supported")
        out.append(char)
        index += 1
    return "".join(out)


def scalar(text: str, line: int) -> Any:
    """A YAML 1.1 scalar as PyYAML's safe_load resolves it."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        return _quoted(text, line)
    if text[:1] in ("&", "*", "!", "|", ">", "%", "@", "`", "{"):
        raise YamlError(f"line {line}: {text!r} uses YAML that profilekit import does not read; quote the value")
    if ": " in text or text.endswith(":") or " #" in text:
        raise YamlError(f"line {line}: {text!r} is not a plain value; quote it")
    if text in _NULL:
        return None
    if text in _BOOL_TRUE:
        return True
    if text in _BOOL_FALSE:
        return False
    if _AMBIGUOUS.fullmatch(text) or _TIMESTAMP.fullmatch(text):
        raise YamlError(f"line {line}: YAML 1.1 reads {text!r} as a number or a date; quote it if it is a string")
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def _flow_list(text: str, line: int) -> list[Any]:
    inner = text[1:-1].strip()
    if not inner:
        return []
    items: list[str] = []
    current, quote, index = "", None, 0
    while index < len(inner):
        char = inner[index]
        if quote == '"' and char == "\\":
            current += inner[index : index + 2]
            index += 2
            continue
        if quote:
            current += char
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
            current += char
        elif char in "[]{}":
            raise YamlError(f"line {line}: nested flow collections are not supported; use block style")
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
        index += 1
    items.append(current)
    return [scalar(item, line) for item in items]


def _value(text: str, line: int) -> Any:
    if text.startswith("["):
        if not text.endswith("]"):
            raise YamlError(f"line {line}: a flow list must end on the same line")
        return _flow_list(text, line)
    return scalar(text, line)


def _key(text: str, line: int) -> str:
    if text[:1] in ("'", '"'):
        return _quoted(text, line)
    return text


def read_yaml(text: str) -> dict[str, Any]:
    """The mapping of a config file (raises YamlError)."""
    lines: list[tuple[int, int, str]] = []  # (line number, indent, content)
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlError(f"line {number}: tabs cannot indent YAML")
        content = _strip_comment(raw)
        if not content.strip():
            continue
        if content.strip() in ("---", "..."):
            if number == 1 or content.strip() == "...":
                continue
            raise YamlError(f"line {number}: a config file holds one YAML document")
        lines.append((number, len(content) - len(content.lstrip()), content.strip()))
    if not lines:
        # yaml.safe_load gives None, and vLLM fails on None.items()
        raise YamlError("the file holds no options; vLLM cannot start from an empty config file")
    value, end = _block(lines, 0, lines[0][1])
    if end != len(lines):
        raise YamlError(f"line {lines[end][0]}: unexpected indentation")
    if not isinstance(value, dict):
        raise YamlError(f"line {lines[0][0]}: a config file is a mapping of option names to values")
    return value


def _block(lines: list[tuple[int, int, str]], start: int, indent: int) -> tuple[Any, int]:
    number, _, content = lines[start]
    if content.startswith("- ") or content == "-":
        items: list[Any] = []
        index = start
        while index < len(lines) and lines[index][1] == indent and lines[index][2][:2] in ("- ", "-"):
            item = lines[index][2][1:].strip()
            if not item:
                raise YamlError(f"line {lines[index][0]}: nested lists are not supported")
            if _KEY.match(item):
                raise YamlError(f"line {lines[index][0]}: lists of mappings are not supported")
            items.append(_value(item, lines[index][0]))
            index += 1
        return items, index
    mapping: dict[str, Any] = {}
    index = start
    while index < len(lines) and lines[index][1] == indent:
        number, _, content = lines[index]
        match = _KEY.match(content)
        if not match:
            raise YamlError(f"line {number}: expected `key: value`, got {content!r}")
        key = _key(match.group(1), number)
        if key in mapping:
            raise YamlError(f"line {number}: {key!r} appears twice")
        rest = content[match.end() :].strip()
        index += 1
        if rest:
            mapping[key] = _value(rest, number)
        elif index < len(lines) and lines[index][1] > indent:
            mapping[key], index = _block(lines, index, lines[index][1])
        elif index < len(lines) and lines[index][1] == indent and lines[index][2][:2] in ("- ", "-"):
            mapping[key], index = _block(lines, index, indent)  # YAML allows `key:\n- a` at the same indent
        else:
            mapping[key] = None
    if index < len(lines) and lines[index][1] > indent:
        raise YamlError(f"line {lines[index][0]}: unexpected indentation")
    return mapping, index


def config_args(mapping: dict[str, Any], notes: list[str] | None = None) -> list[str]:
    """The argv words `vllm serve` makes of a config mapping (`FlexibleArgumentParser.load_config_file`).

    `true` becomes `--KEY`, lists the values after one flag (each `str(item)`), mappings one JSON word,
    anything else `str(value)`. `false` is dropped: vLLM (0.28+) would write `--no-KEY` if that option
    string belonged to the parser that expands the file, but through the real `vllm` command that parser
    is the top-level one, which has no serve options (checked with the oracle), and 0.27 drops it anyway.
    """
    args: list[str] = []
    for key, value in mapping.items():
        if isinstance(value, bool):
            if value:
                args.append("--" + key)
            elif notes is not None:
                notes.append(f"`{key}: false` in a config file is ignored by `vllm serve`; left out of the layer")
        elif isinstance(value, list):
            if value:
                args += ["--" + key, *(str(item) for item in value)]
        elif isinstance(value, dict):
            args += ["--" + key, json.dumps(value)]
        else:
            args += ["--" + key, str(value)]
    return args
