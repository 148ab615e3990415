"""The value constraints shipped beside each flag catalogue (vllm/constraints.py, vllm/schema.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.constraints import load_values
from profilekit.vllm.schema import Validator
from profilekit.vllm.versions import SUPPORTED


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_release_ships_constraints_for_the_options_of_its_catalogue(version: str) -> None:
    values = load_values(version)
    catalogue = load_catalogue(version)
    assert values is not None and catalogue is not None
    options = values.raw["options"]
    assert options["gpu_memory_utilization"]["schema"] == {"gt": 0, "le": 1, "type": "float"}
    assert set(options) <= set(catalogue.flags)
    assert values.json_class("compilation_config") == "CompilationConfig"
    assert values.splat("speculative_config") is not None
    assert "fp8" in (values.registry("quantization") or [])


def test_the_constraints_are_read_only_when_a_check_needs_them() -> None:
    code = (
        "import sys\n"
        "from profilekit.vllm.catalogue import load_catalogue\n"
        "load_catalogue('0.33.0')\n"
        "assert 'profilekit.vllm.constraints' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ({"type": "int", "ge": 1}, -5, "Input should be greater than or equal to 1"),
        ({"type": "float", "gt": 0, "le": 1}, 90, "Input should be less than or equal to 1"),
        ({"type": "int"}, 1.5, "Input should be a valid integer, got a number with a fractional part"),
        ({"type": "int"}, "x", "Input should be a valid integer, unable to parse string as an integer"),
        ({"type": "str"}, 5, "Input should be a valid string"),
        ({"type": "bool"}, "maybe", "Input should be a valid boolean, unable to interpret input"),
        ({"type": "literal", "expected": ["a", "b", "c"]}, "x", "Input should be 'a', 'b' or 'c'"),
        ({"type": "enum", "values": [0, 1, 2, 3]}, 7, "Input should be 0, 1, 2 or 3"),
        ({"type": "list", "items": {"type": "str"}}, "x", "Input should be a valid array"),
        ({"type": "dict"}, [1], "Input should be an object"),
    ],
)
def test_pydantic_json_mode_messages(schema: dict[str, object], value: object, message: str) -> None:
    (error,) = Validator({}, mode="json").check(schema, value)
    assert error.message == message


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "int", "ge": 1}, "7"),  # lax mode reads a numeric string
        ({"type": "int"}, 2.0),
        ({"type": "bool"}, "yes"),
        ({"type": "float", "le": 1}, True),
        ({"type": "literal", "expected": [1, 2]}, 1.0),
        ({"type": "opaque"}, {"anything": True}),
        ({"type": "union", "choices": [{"type": "int", "gt": 0}, {"type": "str"}]}, "auto"),
    ],
)
def test_what_pydantic_accepts_is_accepted(schema: dict[str, object], value: object) -> None:
    assert Validator({}, mode="json").check(schema, value) == []
