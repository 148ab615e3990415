"""`vllm serve --config FILE.yaml`: read and write config files with PyYAML, the library vLLM reads them with.

vLLM's `FlexibleArgumentParser.load_config_file` (vllm/utils/argparse_utils.py, 0.27.0-0.33.0) reads the
file with `yaml.safe_load` and turns each top-level entry into argv words. profilekit reads (`import`) and
writes (`render --target vllm-config`) with the same `yaml.safe_load` / `yaml.safe_dump`, so a value means
to profilekit what it means to vLLM: YAML 1.1 resolution (`yes` and `on` are booleans, `010` is octal),
anchors, block strings and dates included. PyYAML is imported here only, when a config file is read or
written, to keep the start-up of every other command small.
"""

from __future__ import annotations

import json
from typing import Any

import yaml


class YamlError(ValueError):
    """A config file vLLM cannot read, or cannot turn into arguments: the message names the line."""


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def read_yaml(text: str) -> dict[str, Any]:
    """The mapping of a config file, as `yaml.safe_load` gives it to vLLM (raises YamlError).

    A key that appears twice keeps its last value, as in vLLM (PyYAML does not refuse it).
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        if node is None or data is None:
            # yaml.safe_load gives None, and vLLM fails on None.items()
            raise YamlError("the file holds no options; vLLM cannot start from an empty config file")
        if not isinstance(data, dict):
            raise YamlError(f"{_at(node.start_mark)}: a config file is a mapping of option names to values")
        for key_node, value_node in node.value:
            _check_entry(loader.construct_object(key_node, deep=True), key_node, value_node, data)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = ": ".join(part for part in (exc.context, exc.problem) if part)
        raise YamlError(f"{_at(mark)}: {problem}" if mark is not None else problem) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from None
    finally:
        loader.dispose()
    return data


def _check_entry(key: Any, key_node: Any, value_node: Any, data: dict[Any, Any]) -> None:
    """Refuse what vLLM fails on with a traceback: a key that is no string, a mapping that is no JSON."""
    if not isinstance(key, str):
        # vLLM builds `"--" + key`: a number or a null as a key fails there with a TypeError
        raise YamlError(f"{_at(key_node.start_mark)}: the option name {key_node.value!r} is not a string; quote it")
    value = data[key]
    if isinstance(value, dict):
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise YamlError(
                f"{_at(value_node.start_mark)}: {key}: vLLM passes a mapping on as JSON, and this one "
                f"cannot be ({exc}); quote the value that is not a string, number, boolean or null"
            ) from None


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


def dump_yaml(mapping: dict[str, Any]) -> str:
    """`mapping` as block YAML that `yaml.safe_load` reads back to the very same values.

    PyYAML quotes every string its own resolver would read as something else ('0.9', 'yes', 'null',
    '2024-01-01', '010'); keys keep their order; lines are never folded (a folded string reads the same, but
    a reviewer should see one option per line). Non-ASCII characters are written as escapes: vLLM opens the
    file in the locale's encoding (`open(file_path)`), which need not be UTF-8.
    """
    text: str = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=False, allow_unicode=False, width=1 << 30)
    return text
