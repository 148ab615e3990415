"""Hostile input at load, compose and check time: a table of bad inputs -> the exit code and message they must produce.

Every row runs the real CLI in a fresh repository and asserts, besides its exit code and the whole lines of its
message: no traceback and no internal error, and no secret echoed. The inputs are malformed TOML of every kind,
wrong types at every level of the layer file and of profilekit.toml, nesting past every limit, long `extends`
chains and cycles, a 10 MB layer, NUL characters and invalid UTF-8, and names built to escape a folder or a
shell. Shares: this module is hostile-load's; tests/hostile/test_render.py is hostile-render's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import Run

# token-shaped values, built here so that this file holds none
TOKEN = "sk-live-" + "a1B2c3D4" * 3
HF = "hf_" + "Qx7" * 12
CONFIG = '[vllm]\nversion = "0.33.0"\n'
MODEL = '[serve]\nmodel = "m"\n'
SYNTAX_FIX = "    fix: fix the TOML syntax at that position"
NUL_MESSAGE = (
    "holds a NUL character, which no process argument or environment variable can carry "
    "(bash drops it, so the process would get another value)"
)
Files = dict[str, str | bytes]


@dataclass(frozen=True)
class Case:
    id: str
    files: Files | Callable[[], Files]  # paths below the repository; profilekit.toml is CONFIG unless given
    args: tuple[str, ...]
    code: int
    lines: tuple[str, ...]  # whole lines the output (stdout and stderr) must hold, in this order
    secret: str = ""  # must appear nowhere in the output
    seconds: float = 0.0  # when set: the run must take less (a generous bound on a loaded 2-core machine)
    more: dict[str, str] = field(default_factory=dict)


def layer(text: str | bytes, name: str = "a") -> Files:
    return {f"profiles/{name}.toml": text}


def nested(depth: int, open_: str, close: str, inner: str = "1") -> str:
    return open_ * depth + inner + close * depth


def chain(length: int, *, cycle: bool) -> Files:
    """c0 extends c1 extends ... c{length-1}; with `cycle`, the last extends c0 again."""
    files: Files = {}
    for i in range(length):
        parent = f"c{i + 1}" if i + 1 < length else ("c0" if cycle else "")
        extends = f'[layer]\nextends = ["{parent}"]\n' if parent else ""
        files[f"profiles/c{i}.toml"] = extends + (MODEL if i == length - 1 else "")
    return files


def big_env() -> Files:
    """A 10 MB layer: 110,000 [env] entries."""
    lines = [MODEL, "[env]"]
    lines += [
        f'VARIABLE_{i:06d}_OF_A_VERY_LARGE_LAYER = "value {i} padded to ninety bytes or so...."' for i in range(110_000)
    ]
    return layer("\n".join(lines) + "\n")


CASES = [
    # ---- malformed TOML: the error at its true position, not 1:1 --------------------------------------------
    Case(
        "unclosed-basic-string-at-end",
        layer(MODEL + 'x = "abc'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:5: error toml-syntax invalid TOML: Unterminated string: the string opened here is not closed before the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-multiline-basic-string",
        layer(MODEL + '\ndescription = """one\ntwo\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:15: error toml-syntax invalid TOML: Unterminated string: the string opened here is not closed before the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-multiline-literal-string",
        layer(MODEL + "x = '''one\n\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:5: error toml-syntax invalid TOML: Expected \"'''\": the string opened here is not closed before the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-literal-string-at-end",
        layer(MODEL + "x = 'abc"),
        ("check", "a"),
        1,
        (
            'profiles/a.toml:3:5: error toml-syntax invalid TOML: Expected "\'": the string opened here is not closed before the end of the file',
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-inline-table",
        layer(MODEL + "x = {a = 1,\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:5: error toml-syntax invalid TOML: Invalid initial character for a key part: the inline table opened here is not closed before the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-array",
        layer(MODEL + 'x = [\n  "a",\n  "b",\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:5: error toml-syntax invalid TOML: Invalid value: the array opened here is not closed before the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "value-missing-at-end",
        layer(MODEL + "x ="),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:4: error toml-syntax invalid TOML: Invalid value at the end of the file",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "double-equals",
        layer(MODEL + "x = = 1\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:5: error toml-syntax invalid TOML: Invalid value",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "duplicate-key",
        layer(MODEL + 'model = "n"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:12: error toml-syntax invalid TOML: Cannot overwrite a value",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "unclosed-header",
        layer("[serve\nmodel = 'm'\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:1:7: error toml-syntax invalid TOML: Expected ']' at the end of a table declaration",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "invalid-utf8",
        layer(MODEL.encode() + b'x = "\xff\xfe"\n'),
        ("check", "a"),
        1,
        ("profiles/a.toml:3:1: error toml-syntax file is not valid UTF-8", "    fix: save the file as UTF-8"),
    ),
    Case(
        "raw-nul-byte",
        layer(MODEL.encode() + b'x = "a\x00b"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:7: error toml-syntax invalid TOML: Illegal character '\\x00'",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    # ---- nesting past every limit ----------------------------------------------------------------------------
    Case(
        "inline-tables-1000-deep",
        layer(MODEL + "x = " + nested(1000, "{a = ", "}") + "\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:2000: error toml-syntax invalid TOML: TOML inline arrays/tables are nested more than the allowed 400 levels",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "arrays-1000-deep",
        layer(MODEL + "x = " + nested(1000, "[", "]") + "\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:404: error toml-syntax invalid TOML: TOML inline arrays/tables are nested more than the allowed 400 levels",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "header-of-1000-parts",
        layer(MODEL + "[" + ".".join(["a"] * 1000) + "]\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer a.a.a...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    Case(
        "header-999-parts-deep",
        layer(MODEL + "[serve.kv_transfer_config." + ".".join(["a"] * 997) + "]\nx = 1\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer serve.kv_transfer_config.a...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    Case(
        "json-option-399-deep",
        layer(MODEL + "kv_transfer_config = " + nested(399, "{a = ", "}") + "\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:173: error invalid-layer serve.kv_transfer_config.a...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    Case(
        "array-399-deep-in-role",
        layer(MODEL + '[roles.p]\nkind = "command"\ncommand = ' + nested(399, "[", "]") + "\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:5:41: error invalid-layer roles.p.command...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    Case(
        "show-json-option-399-deep",
        layer(MODEL + "kv_transfer_config = " + nested(399, "{a = ", "}") + "\n"),
        ("show", "a"),
        1,
        (
            "profiles/a.toml:3:173: error invalid-layer serve.kv_transfer_config.a...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    # ---- extends chains and cycles ----------------------------------------------------------------------------
    Case(
        "extends-chain-5000",
        lambda: chain(5000, cycle=False),
        ("check", "c0"),
        0,
        ("c0: no problems found (vLLM 0.33.0)",),
        seconds=60,
    ),
    Case(
        "extends-cycle-5000",
        lambda: chain(5000, cycle=True),
        ("check", "c0"),
        1,
        (
            "profiles/c4999.toml:2:12: error extends-cycle extends forms a cycle: c0 -> c1 -> c2 -> c3 -> c4 -> c5 -> ... (4989 more layers) -> c4995 -> c4996 -> c4997 -> c4998 -> c4999 -> c0",
            "    fix: remove one of these `extends` entries",
        ),
        seconds=60,
    ),
    Case(
        "show-extends-chain-5000",
        lambda: chain(5000, cycle=False),
        ("explain", "c0", "serve.model"),
        0,
        ('[serve] serve.model = "m"', "    set at profiles/c4999.toml:2:1  (serve.model, layer c4999)"),
        seconds=60,
    ),
    Case(
        "list-extends-chain-5000",
        lambda: chain(5000, cycle=False),
        ("list",),
        0,
        ("c0       [extends=c1]",),
        seconds=60,
    ),
    Case(
        "list-extends-cycle-5000",  # the cycle once, not once per layer in it (that was 80 s and 1.4 MB)
        lambda: chain(5000, cycle=True),
        ("list",),
        1,
        (
            "profiles/c4999.toml:2:12: error extends-cycle extends forms a cycle: c0 -> c1 -> c2 -> c3 -> c4 -> c5 -> ... (4989 more layers) -> c4995 -> c4996 -> c4997 -> c4998 -> c4999 -> c0",
            "1 error, 0 warnings",
        ),
        seconds=60,
    ),
    Case(
        "lint-pairs-extends-cycle-300",  # no pair is composed again around a member's cycle (was cubic: 40 s)
        lambda: chain(300, cycle=True),
        ("lint",),
        1,
        (
            "profiles/c299.toml:2:12: error extends-cycle extends forms a cycle: c0 -> c1 -> c2 -> c3 -> c4 -> c5 -> ... (289 more layers) -> c295 -> c296 -> c297 -> c298 -> c299 -> c0",
            "    not composed: 300 stacks reach this cycle through extends (c0, c1, c10, c100, c101, c102 and 294 more)",
            "    fix: remove one of these `extends` entries",
            "1 error, 0 warnings",
        ),
        seconds=30,
    ),
    Case(
        "lint-extends-chain-5000",  # each layer merged on its parent's merge: not 12.5 million merges (was 85 s)
        lambda: chain(5000, cycle=False),
        ("lint", "--combinations", "none"),  # pairs of 5,000 layers are 12.5 million stacks
        0,
        ("lint: 5000 files, 5000 stacks checked, no problems found (vLLM 0.33.0)",),
        seconds=60,
    ),
    Case(
        "lint-extends-cycle-5000",  # the cycle once, found in one walk: not once per member, each walking it all
        lambda: chain(5000, cycle=True),
        ("lint",),
        1,
        (
            "profiles/c4999.toml:2:12: error extends-cycle extends forms a cycle: c0 -> c1 -> c2 -> c3 -> c4 -> c5 -> ... (4989 more layers) -> c4995 -> c4996 -> c4997 -> c4998 -> c4999 -> c0",
            "    not composed: 5000 stacks reach this cycle through extends (c0, c1, c10, c100, c1000, c1001 and 4994 more)",
            "    fix: remove one of these `extends` entries",
            "1 error, 0 warnings",
        ),
        seconds=60,
    ),
    Case(
        "import-json-5000-deep",
        layer(MODEL),
        ("import", "--name", "deep", "--", "vllm", "serve", "m", "--kv-transfer-config", nested(5000, '{"a": ', "}")),
        2,
        (
            "profilekit: error: cannot import the command line: --kv-transfer-config nests JSON more than 32 levels "
            "deep, more than a layer may hold",
        ),
    ),
    Case(
        "import-json-100-deep",
        layer(MODEL),
        ("import", "--name", "deep", "--", "vllm", "serve", "m", "--kv-transfer-config", nested(100, '{"a": ', "}")),
        2,
        (
            "profilekit: error: cannot import the command line: --kv-transfer-config nests JSON more than 32 levels "
            "deep, more than a layer may hold",
        ),
    ),
    # ---- size --------------------------------------------------------------------------------------------------
    Case("layer-10mb-check", big_env, ("check", "a"), 0, ("a: no problems found (vLLM 0.33.0)",), seconds=30),
    Case("layer-10mb-show", big_env, ("show", "a"), 0, ('stack = "a"', 'layers = ["a"]'), seconds=30),
    # ---- names -------------------------------------------------------------------------------------------------
    Case(
        "env-name-with-newline",
        layer(MODEL + '[env]\nA = "1"\n"FOO\\n" = "1"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:5:1: error invalid-layer env.\"FOO\\n\": 'FOO\\n' is not a valid environment variable name: letters, digits and '_', not starting with a digit",
            "    fix: rename the variable, e.g. MY_VAR_1",
        ),
    ),
    Case(
        "env-name-with-space-at-its-line",
        layer(MODEL + '[env]\nA = "1"\nB = "2"\n"FOO BAR" = "3"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:6:1: error invalid-layer env.\"FOO BAR\": 'FOO BAR' is not a valid environment variable name: letters, digits and '_', not starting with a digit",
            "    fix: rename the variable, e.g. MY_VAR_1",
        ),
    ),
    Case(
        "env-name-digit-in-role",
        layer(MODEL + '[roles.p.env]\n1X = "1"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer roles.p.env.1X: '1X' is not a valid environment variable name: letters, digits and '_', not starting with a digit",
            "    fix: rename the variable, e.g. MY_VAR_1",
        ),
    ),
    Case(
        "env-name-shell",
        layer(MODEL + '[env]\n"X;touch PWNED" = "1"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.\"X;touch PWNED\": 'X;touch PWNED' is not a valid environment variable name: letters, digits and '_', not starting with a digit",
            "    fix: rename the variable, e.g. MY_VAR_1",
        ),
    ),
    Case(
        "role-name-with-space",
        layer(MODEL + '[roles."a b".serve]\nport = 1\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer roles.\"a b\": 'a b' is not a valid role name: letters, digits, '_', '.' and '-', starting with a letter or digit",
            "    fix: rename the role: it names the output files (ROLE.sh, ROLE.env)",
        ),
    ),
    Case(
        "role-name-dot-dot",
        layer(MODEL + '[roles."..".serve]\nport = 1\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer roles.\"..\": '..' is not a valid role name: letters, digits, '_', '.' and '-', starting with a letter or digit",
            "    fix: rename the role: it names the output files (ROLE.sh, ROLE.env)",
        ),
    ),
    Case(
        "role-name-slash",
        layer(MODEL + '[roles."../../x"]\ncommand = ["a"]\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer roles.\"../../x\": '../../x' is not a valid role name: letters, digits, '_', '.' and '-', starting with a letter or digit",
            "    fix: rename the role: it names the output files (ROLE.sh, ROLE.env)",
        ),
    ),
    Case(
        "role-name-shell",
        layer(MODEL + '[roles."$(touch PWNED)"]\ncommand = ["a"]\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer roles.\"$(touch PWNED)\": '$(touch PWNED)' is not a valid role name: letters, digits, '_', '.' and '-', starting with a letter or digit",
            "    fix: rename the role: it names the output files (ROLE.sh, ROLE.env)",
        ),
    ),
    Case(
        "extends-dot-dot",
        layer(MODEL + '[layer]\nextends = ["../x"]\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:12: error invalid-layer layer.extends[0]: '../x' is not a layer name: a layer is named by its path below profiles/ without .toml (site/h100)",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "extends-space",
        layer('[layer]\nextends = ["a b"]\n' + MODEL),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:2:12: error invalid-layer layer.extends[0]: 'a b' is not a layer name: a layer is named by its path below profiles/ without .toml (site/h100)",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "stack-dot-dot",
        layer(MODEL),
        ("check", "../profilekit"),
        2,
        ("profilekit: error: unknown layer '../profilekit' in stack '../profilekit'", "  hint: known layers: a"),
    ),
    Case(
        "stack-absolute",
        layer(MODEL),
        ("check", "/etc/passwd"),
        2,
        ("profilekit: error: unknown layer '/etc/passwd' in stack '/etc/passwd'", "  hint: known layers: a"),
    ),
    Case(
        "stack-space",
        layer(MODEL),
        ("check", "a b"),
        2,
        ("profilekit: error: unknown layer 'a b' in stack 'a b'", "  hint: known layers: a"),
    ),
    Case(
        "stack-shell",
        layer(MODEL),
        ("check", "a;touch PWNED"),
        2,
        ("profilekit: error: unknown layer 'a;touch PWNED' in stack 'a;touch PWNED'", "  hint: known layers: a"),
    ),
    Case(
        "stack-empty",
        layer(MODEL),
        ("check", ""),
        2,
        ("profilekit: error: invalid stack ''", "  hint: write layer names joined by '+', e.g. base+replayssm"),
    ),
    Case(
        "role-option-escapes",
        layer(MODEL),
        ("show", "a", "--role", "../x"),
        2,
        ("profilekit: error: stack 'a' has no role '../x'", "  hint: roles of this stack: serve"),
    ),
    # ---- NUL characters --------------------------------------------------------------------------------------
    Case(
        "nul-in-serve-value",
        layer(MODEL + 'tokenizer = "a\\u0000b"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer serve.tokenizer: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-in-env-value",
        layer(MODEL + '[env]\nX = "a\\u0000b"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.X: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-as-toml-1.1-hex-escape",
        layer(MODEL + 'tokenizer = "a\\x00b"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer serve.tokenizer: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-in-command",
        layer(MODEL + '[roles.p]\nkind = "command"\ncommand = ["x", "a\\u0000"]\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:5:17: error invalid-layer roles.p.command[1]: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-in-key",
        layer(MODEL + '"to\\u0000ken" = "1"\n'),
        ("check", "a"),
        1,
        (
            'profiles/a.toml:3:1: error invalid-layer serve."to\\u0000ken": holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)',
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-in-json-option",
        layer(MODEL + '[serve.kv_transfer_config]\nkv_connector = "N\\u0000"\n'),
        ("show", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer serve.kv_transfer_config.kv_connector: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
    ),
    Case(
        "nul-beside-a-secret",
        layer(MODEL + f'[env]\nHF_TOKEN = "{HF}\\u0000"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.HF_TOKEN: holds a NUL character, which no process argument or environment variable can carry (bash drops it, so the process would get another value)",
            "    fix: remove the NUL (a \\u0000 escape) from the key or value",
        ),
        secret=HF,
    ),
    # ---- vLLM version ------------------------------------------------------------------------------------------
    Case(
        "vllm-version-empty",
        layer(MODEL),
        ("--vllm-version", "", "check", "a"),
        2,
        (
            "profilekit: error: unsupported vLLM version '' (from --vllm-version)",
            "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0",
        ),
    ),
    Case(
        "vllm-version-unsupported",
        layer(MODEL),
        ("--vllm-version", "0.26.0", "check", "a"),
        2,
        (
            "profilekit: error: unsupported vLLM version '0.26.0' (from --vllm-version)",
            "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0",
        ),
    ),
    Case(
        "config-version-empty",
        {**layer(MODEL), "profilekit.toml": '[vllm]\nversion = ""\n'},
        ("check", "a"),
        2,
        (
            "profilekit: error: unsupported vLLM version '' (from [vllm] version in profilekit.toml)",
            "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0",
        ),
    ),
    # ---- wrong types at every level of the layer file ----------------------------------------------------------
    Case(
        "layer-not-a-table",
        layer('layer = "x"\n' + MODEL),
        ("check", "a"),
        1,
        ("profiles/a.toml:1:1: error invalid-layer layer: expected a table, got a string", "1 error, 0 warnings"),
    ),
    Case(
        "extends-a-string",
        layer('[layer]\nextends = "base"\n' + MODEL),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:2:1: error invalid-layer layer.extends: expected an array, got a string",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "abstract-a-string",
        layer('[layer]\nabstract = "yes"\n' + MODEL),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:2:1: error invalid-layer layer.abstract: expected a boolean, got a string",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "unset-an-integer",
        layer("[layer]\nunset = [1]\n" + MODEL),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:2:10: error invalid-layer layer.unset[0]: expected a string, got an integer",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "provides-bad-name",
        layer('[layer]\nprovides = ["a b"]\n' + MODEL),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:2:13: error invalid-layer layer.provides[0]: 'a b' is not a capability name: letters, digits, '_', '.' and '-', without the '@'",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "serve-not-a-table",
        layer("serve = 1\n"),
        ("check", "a"),
        1,
        ("profiles/a.toml:1:1: error invalid-layer serve: expected a table, got an integer", "1 error, 0 warnings"),
    ),
    Case(
        "env-value-an-integer",
        layer(MODEL + "[env]\nX = 1\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.X: expected a string or { secret = true }, got an integer",
            '    fix: env values are strings (quote numbers: "1") or { secret = true }',
        ),
    ),
    Case(
        "env-value-a-date",
        layer(MODEL + "[env]\nX = 1979-05-27\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.X: expected a string or { secret = true }, got a date or time",
            '    fix: env values are strings (quote numbers: "1") or { secret = true }',
        ),
    ),
    Case(
        "env-secret-false",
        layer(MODEL + "[env]\nX = { secret = false }\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:7: error invalid-layer env.X.secret: must be `secret = true`",
            '    fix: env values are strings (quote numbers: "1") or { secret = true }',
        ),
    ),
    Case(
        "roles-an-array",
        layer("roles = []\n" + MODEL),
        ("check", "a"),
        1,
        ("profiles/a.toml:1:1: error invalid-layer roles: expected a table, got an array", "1 error, 0 warnings"),
    ),
    Case(
        "command-a-string",
        layer(MODEL + '[roles.p]\nkind = "command"\ncommand = "vllm"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:5:1: error invalid-layer roles.p.command: expected an array, got a string",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "command-empty",
        layer(MODEL + '[roles.p]\nkind = "command"\ncommand = []\n'),
        ("check", "a"),
        1,
        ("profiles/a.toml:5:1: error invalid-layer roles.p.command: must not be empty", "1 error, 0 warnings"),
    ),
    Case(
        "role-env-a-string",
        layer(MODEL + '[roles.p]\nenv = "x"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer roles.p.env: expected a table, got a string",
            '    fix: env values are strings (quote numbers: "1") or { secret = true }',
        ),
    ),
    Case(
        "model-architecture-an-integer",
        layer(MODEL + "[model]\narchitecture = 1\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer model.architecture: expected a string, got an integer",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "unknown-top-level-table",
        layer(MODEL + "[servee]\nx = 1\n"),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:3:1: error invalid-layer servee: unknown key",
            "    fix: top-level tables are [layer], [model], [serve], [env] and [roles.NAME]",
        ),
    ),
    # ---- profilekit.toml -----------------------------------------------------------------------------------------
    Case(
        "config-syntax",
        {**layer(MODEL), "profilekit.toml": '[vllm]\nversion = "0.33.0\n'},
        ("check", "a"),
        1,
        (
            "profilekit.toml:2:18: error toml-syntax invalid TOML: Illegal character '\\n'",
            "    fix: fix the TOML syntax at that position",
        ),
    ),
    Case(
        "config-version-a-number",
        {**layer(MODEL), "profilekit.toml": "[vllm]\nversion = 33\n"},
        ("check", "a"),
        1,
        (
            "profilekit.toml:2:1: error invalid-config vllm.version: expected a string, got an integer",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "config-combinations",
        {**layer(MODEL), "profilekit.toml": '[lint]\ncombinations = "some"\n'},
        ("check", "a"),
        1,
        (
            "profilekit.toml:2:1: error invalid-config lint.combinations: Input should be 'none', 'pairs' or 'all'",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "config-stacks-a-string",
        {**layer(MODEL), "profilekit.toml": '[lint]\nstacks = "a"\n'},
        ("check", "a"),
        1,
        (
            "profilekit.toml:2:1: error invalid-config lint.stacks: expected an array, got a string",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "config-templates-an-integer",
        {**layer(MODEL), "profilekit.toml": "[render]\ntemplates = 1\n"},
        ("check", "a"),
        1,
        (
            "profilekit.toml:2:1: error invalid-config render.templates: expected a string, got an integer",
            "1 error, 0 warnings",
        ),
    ),
    Case(
        "config-nested-deep",
        {**layer(MODEL), "profilekit.toml": "x = " + nested(100, "{a = ", "}") + "\n"},
        ("check", "a"),
        1,
        (
            "profilekit.toml:1:161: error invalid-config x.a.a...: tables and arrays are nested more than 32 levels deep",
            "    fix: flatten the value: no vLLM option nests more than a few levels",
        ),
    ),
    Case(
        "config-invalid-utf8",
        {**layer(MODEL), "profilekit.toml": b"[vllm]\n# \xc3\x28\n"},
        ("check", "a"),
        1,
        ("profilekit.toml:2:1: error toml-syntax file is not valid UTF-8", "    fix: save the file as UTF-8"),
    ),
    # ---- secrets ---------------------------------------------------------------------------------------------
    Case(
        "literal-token-in-env",
        layer(MODEL + f'[env]\nHF_TOKEN = "{HF}"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error literal-secret env.HF_TOKEN holds a token-shaped value that looks like a credential; a secret written into a profile ends up in git history and in every rendered file (the value is not shown here)",
            "    in stack a",
        ),
        secret=HF,
    ),
    Case(
        "token-as-env-name",
        layer(MODEL + f'[env]\n"{TOKEN}" = "1"\n'),
        ("check", "a"),
        1,
        (
            "profiles/a.toml:4:1: error invalid-layer env.<redacted>: '<redacted>' is not a valid environment variable name: letters, digits and '_', not starting with a digit",
            "    fix: rename the variable, e.g. MY_VAR_1",
        ),
        secret=TOKEN,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_load(case: Case, run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    files = case.files() if callable(case.files) else case.files
    for name, text in {"profilekit.toml": CONFIG, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (root / "profiles").mkdir(exist_ok=True)
    started = time.monotonic()
    result = run(*case.args, cwd=root)
    took = time.monotonic() - started
    text = result.out + result.err
    assert "Traceback" not in text and "internal error" not in text, result
    assert result.code == case.code, result
    if case.args[0] == "import" and case.code:
        assert not (root / "profiles" / "deep.toml").exists()  # nothing written
    if case.secret:
        assert case.secret not in text
    if case.seconds:
        assert took < case.seconds
    lines = text.splitlines()
    at = 0
    for expected in case.lines:
        assert expected in lines[at:], result
        at = lines.index(expected, at) + 1


def test_the_guard_walks_only_a_document_that_can_hold_a_nul_or_deep_nesting() -> None:
    """`could_be_unsafe` may say yes too often (then the walk decides), never no to a document that needs it."""
    from profilekit.tomlio.guards import MAX_DEPTH, could_be_unsafe

    assert not could_be_unsafe('[serve]\nmodel = "org/model"\nmax_num_seqs = 8\n')
    assert could_be_unsafe('a = "x\\u0000"\n') and could_be_unsafe('a = "x\\x00"\n')
    deep = "a" + ".a" * MAX_DEPTH + " = 1\n"  # a path of MAX_DEPTH + 1 parts
    assert could_be_unsafe(deep)
    assert could_be_unsafe("x = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
