"""Hostile input at render time: a table of bad inputs -> the exit code and message they must produce.

Every row runs the real CLI in a fresh repository and also asserts the invariants of every bad input: no
traceback, no secret echoed (in the output or in any file written), and a failing run leaves the output
folder exactly as it was (no partial file, no temporary file). Rows that render also run the script with bash
(a stub `vllm` records argv and env) and source the env file, and no planted command may run.
Shares: this module is hostile-render's; tests/hostile/test_load.py is hostile-load's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import Run

# token-shaped values, built here so that this file holds none
TOKEN = "sk-live-" + "a1B2c3D4" * 3
HF = "hf_" + "Qx7" * 12
PREVIOUS = {"serve.sh": "#!/usr/bin/env bash\necho previous\n", "serve.env": "A='previous'\n"}
TEMPLATES = '[render]\ntemplates = "tt"\n'
PLAIN = {"profiles/a.toml": '[serve]\nmodel = "m"\n'}
PD = {
    "profiles/pd.toml": (
        '[serve]\nmodel = "m"\n[roles.prefill.serve]\nport = 8100\n[roles.decode.serve]\nport = 8200\n'
        '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router", "--port", "8192"]\n\n[roles.decode]\nkind = "vllm"\n\n[roles.prefill]\nkind = "vllm"\n'
    )
}
TEMPLATE_FIX = (
    "    fix: fix the template; templates can use: command, exports, layers, profilekit_version, role, script_name, "
    "secrets, stack, vllm_version"
)
Check = Callable[[Path, Path, Path], None]


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str | bytes]
    args: tuple[str, ...]
    code: int
    message: str  # a whole line of the output (or, for JSON and SARIF, a part of one)
    config: str = ""
    secret: str = ""  # must appear nowhere: not in the output, not in any rendered file
    previous: bool = True  # the output folder holds an earlier render before the run
    plant: Callable[[Path, Path], None] | None = None  # (output folder, tmp): plant links and folders
    check: Check | None = None  # (repo, output folder, tmp): more assertions after the run
    extra: dict[str, str] = field(default_factory=dict)


def template(text: str | bytes, name: str = "launch.sh.j2", **more: str | bytes) -> dict[str, str | bytes]:
    return {**PLAIN, f"tt/{name}": text, **{f"tt/{k.replace('_', '.')}": v for k, v in more.items()}}


def failed(line: int, why: str, file: str = "launch.sh.j2") -> str:
    at = f"failed at line {line}" if line else "failed"
    return f"tt/{file}:{line or 1}:1: error template-error template tt/{file} {at}: {why}"


def state(folder: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Everything in a folder: kind, content (or link target) and mode of each entry."""
    found: dict[str, tuple[str, bytes | str, int]] = {}
    if not folder.exists() and not folder.is_symlink():
        return found
    if folder.is_file() or (folder.is_symlink() and not folder.is_dir()):
        return {".": ("file", folder.read_bytes() if folder.is_file() else os.readlink(folder), 0)}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path), 0)
        elif path.is_dir():
            found[rel] = ("dir", b"", 0)
        else:
            found[rel] = ("file", path.read_bytes(), path.stat().st_mode & 0o777)
    return found


def consistent(out: Path) -> set[str]:
    """The folder holds exactly the files its manifest lists, each with its sha256, and nothing half-written."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    listed = {item["path"]: item["sha256"] for item in manifest["files"]}
    on_disk = {p.name for p in out.iterdir()} - {"manifest.json"}
    assert on_disk == set(listed), (on_disk, listed)
    for name, digest in listed.items():
        assert not (out / name).is_symlink(), name
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    return on_disk


def runs_clean(argv: list[str], env: dict[str, str]) -> Check:
    """bash runs serve.sh with the stub vllm: exactly `argv` and `env` arrive; sourcing serve.env runs nothing."""

    def check(root: Path, out: Path, tmp: Path) -> None:
        consistent(out)
        record = tmp / "record.json"
        base = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "STUB_RECORD": str(record), "LANG": "C.UTF-8"}
        proc = subprocess.run(["bash", str(out / "serve.sh")], env=base, cwd=tmp, capture_output=True, check=False)
        assert proc.returncode == 0, proc
        seen = json.loads(record.read_text(encoding="utf-8"))
        assert seen["argv"][1:] == argv[1:]
        assert {k: seen["env"][k] for k in env} == env
        sourced = subprocess.run(
            ["bash", "-c", f"set -a; . {out / 'serve.env'}; env -0"], cwd=tmp, capture_output=True, check=False
        )
        assert sourced.returncode == 0, sourced
        pairs = dict(item.split("=", 1) for item in sourced.stdout.decode().split("\0") if "=" in item)
        assert {k: pairs[k] for k in env} == env
        assert not list(tmp.rglob("PWNED")), "a planted command ran"

    return check


def link_to(victim: str, name: str) -> Callable[[Path, Path], None]:
    """Plant `name` in the output folder as a symlink to a file outside it."""

    def plant(out: Path, tmp: Path) -> None:
        (tmp / victim).write_text("victim\n", encoding="utf-8")
        (out / name).unlink(missing_ok=True)
        (out / name).symlink_to(tmp / victim)

    return plant


def victim_intact(victim: str, name: str) -> Check:
    def check(root: Path, out: Path, tmp: Path) -> None:
        assert (tmp / victim).read_text(encoding="utf-8") == "victim\n"
        assert not (out / name).is_symlink() and (out / name).is_file()
        consistent(out)

    return check


def manifest_listing(*paths: str) -> Callable[[Path, Path], None]:
    def plant(out: Path, tmp: Path) -> None:
        (tmp / "victim").write_text("victim\n", encoding="utf-8")
        listed = [{"path": p.replace("{tmp}", str(tmp)), "sha256": ""} for p in paths]
        (out / "manifest.json").write_text(json.dumps({"stack": "a", "files": listed}), encoding="utf-8")

    return plant


def victim_kept(root: Path, out: Path, tmp: Path) -> None:
    assert (tmp / "victim").read_text(encoding="utf-8") == "victim\n"
    consistent(out)


def folder(name: str) -> Callable[[Path, Path], None]:
    def plant(out: Path, tmp: Path) -> None:
        (out / name).unlink(missing_ok=True)
        (out / name).mkdir()

    return plant


def replace_out(kind: str) -> Callable[[Path, Path], None]:
    """Make the output folder itself a file, a dangling link, or a link to a real folder."""

    def plant(out: Path, tmp: Path) -> None:
        for child in out.iterdir():
            child.unlink()
        out.rmdir()
        if kind == "file":
            out.write_text("a file\n", encoding="utf-8")
        elif kind == "dangling":
            out.symlink_to(tmp / "nowhere")
        else:
            (tmp / "real").mkdir()
            out.symlink_to(tmp / "real")

    return plant


def real_folder_rendered(root: Path, out: Path, tmp: Path) -> None:
    assert out.is_symlink()
    assert consistent(tmp / "real") == {"serve.sh", "serve.env"}


RENDER = ("render", "a", "--out", "{out}")
SECRET_LINE = (
    "holds a token-shaped value that looks like a credential; a secret written into a profile ends up in git "
    "history and in every rendered file (the value is not shown here)"
)
EVIL_ARGS = '[serve]\nmodel = "m; touch PWNED"\nserved_model_name = ["$(touch PWNED)", "`touch PWNED`"]\n'
EVIL_ENV = '[env]\nA = "$(touch PWNED)"\nB = "line one\\nline two"\nC = "`touch PWNED` \\\\ \\"q\\""\n'

# a secret in every place a layer can write a string: (layer text, the value that must never be repeated)
SECRET_PLACES = {
    "model": (f'[serve]\nmodel = "{TOKEN}"\n', TOKEN),
    "list-option": (f'[serve]\nmodel = "m"\nserved_model_name = ["x", "{TOKEN}"]\n', TOKEN),
    "json-list": (f'[serve]\nmodel = "m"\nkv_transfer_config = {{ kv_connector = "NixlConnector", kv_role = "kv_both", kv_connector_extra_config = {{ peers = ["{TOKEN}"] }} }}\n', TOKEN),
    "role-serve": (f'[serve]\nmodel = "m"\n[roles.r.serve]\nport = 1\napi_key = ["{TOKEN}"]\n\n[roles.r]\nkind = "vllm"\n', TOKEN),
    "role-env": (f'[serve]\nmodel = "m"\n[roles.r.serve]\nport = 1\n[roles.r.env]\nX = "{HF}"\n\n[roles.r]\nkind = "vllm"\n', HF),
    "command-glued": (f'[roles.p]\nkind = "command"\ncommand = ["x", "--token={TOKEN}"]\n', TOKEN),
    "env-secret-name": ('[serve]\nmodel = "m"\n[env]\nMY_API_KEY = "plainvalue99"\n', "plainvalue99"),
    "env-quoted-twice": (f'[serve]\nmodel = "m"\n[env]\nX = "\\"{TOKEN}\\""\n', TOKEN),
}  # fmt: skip

CASES = [
    # ---- team templates that fail at render time: a finding naming file and line, exit 1, nothing written
    Case("template-range", template("{{ range(10**9) | list }}\n"), RENDER, 1, failed(1, "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."), TEMPLATES),
    Case("template-recursive-include", template('x\n{% include "launch.sh.j2" %}\n'), RENDER, 1, failed(2, "it recurses without end (an include or macro that calls itself?)"), TEMPLATES),
    Case("template-recursive-macro", template("{% macro f() %}{{ f() }}{% endmacro %}\n{{ f() }}\n"), RENDER, 1, failed(1, "it recurses without end (an include or macro that calls itself?)"), TEMPLATES),
    Case("template-zero-division", template("#!/bin/sh\n\n{{ 1 // 0 }}\n"), RENDER, 1, failed(3, "ZeroDivisionError: integer division or modulo by zero"), TEMPLATES),
    Case("template-invalid-utf8", template(b"#!/bin/sh\nok\n\xff\xfe {{ role }}\n"), RENDER, 1, failed(3, "the file is not UTF-8 text (byte 0xff at offset 13)"), TEMPLATES),
    Case("template-include-invalid-utf8", template('{% include "inc.j2" %}\n', inc_j2=b"\xc3\x28\n"), RENDER, 1, failed(1, "the file is not UTF-8 text (byte 0xc3 at offset 0)", "inc.j2"), TEMPLATES),
    Case("template-python-internals", template('{{ "".__class__.__mro__[1].__subclasses__() }}\n'), RENDER, 1, failed(1, "refused by the sandbox: access to attribute '__class__' of 'str' object is unsafe."), TEMPLATES),
    Case("template-globals-os", template("{{ cycler.__init__.__globals__.os.system('touch PWNED') }}\n"), RENDER, 1, failed(1, "refused by the sandbox: access to attribute '__init__' of 'type' object is unsafe."), TEMPLATES),
    Case("template-lipsum-globals", template("{{ lipsum.__globals__['os'] }}\n"), RENDER, 1, failed(1, "refused by the sandbox: access to attribute '__globals__' of 'function' object is unsafe."), TEMPLATES),
    Case("template-self-context", template("{{ self._TemplateReference__context }}\n"), RENDER, 1, failed(1, "refused by the sandbox: access to attribute '_TemplateReference__context' of 'TemplateReference' object is unsafe."), TEMPLATES),
    Case("template-include-absolute", template('{% include "/etc/passwd" %}\n'), RENDER, 1, failed(1, "template '/etc/passwd' not found"), TEMPLATES),
    Case("template-include-parent", template('{% include "../../../../etc/passwd" %}\n'), RENDER, 1, failed(1, "template '../../../../etc/passwd' not found"), TEMPLATES),
    Case("template-huge-string", template('{{ "x" * 10**10 }}\n'), RENDER, 1, failed(1, "refused by the sandbox: a repetition of more than 1000000 items is refused in a template"), TEMPLATES),
    Case("template-huge-power", template("{{ 2 ** 100000000 }}\n"), RENDER, 1, failed(1, "refused by the sandbox: 2 ** 100000000 is too large to compute in a template"), TEMPLATES),
    Case("template-huge-output", template('{% for i in range(100000) %}{{ "x" * 999999 }}{% endfor %}\n'), RENDER, 1, failed(0, "stopped: its output passes 10,000,000 characters"), TEMPLATES),
    Case("template-syntax", template("ok\n{% for %}\n"), RENDER, 1, failed(2, "Expected an expression, got 'end of statement block'"), TEMPLATES),
    Case("template-undefined", template("ok\n\n{{ nope }}\n"), RENDER, 1, failed(3, "'nope' is undefined"), TEMPLATES),
    Case("template-env-file", template("{{ {}['missing'] }}\n", "role.env.j2"), RENDER, 1, failed(1, "'dict object' has no attribute 'missing'", "role.env.j2"), TEMPLATES),
    Case("template-print", template("{{ 1 // 0 }}\n"), ("render", "a", "--print"), 1, failed(1, "ZeroDivisionError: integer division or modulo by zero"), TEMPLATES),
    # ---- the output folder: never followed where planted, never half-written, clear when unusable
    Case("out-is-a-file", PLAIN, RENDER, 2, "profilekit: error: cannot write to output folder {out}: File exists", plant=replace_out("file")),
    Case("out-dangling-symlink", PLAIN, RENDER, 2, "profilekit: error: cannot write to output folder {out}: File exists", plant=replace_out("dangling")),
    Case("out-symlink-to-folder", PLAIN, RENDER, 0, "{out}/manifest.json", plant=replace_out("link"), check=real_folder_rendered),
    Case("out-below-a-file", PLAIN, ("render", "a", "--out", "{tmp}/victim/sub"), 2, "profilekit: error: cannot write to output folder {tmp}/victim/sub: Not a directory", plant=lambda out, tmp: (tmp / "victim").write_text("victim\n")),
    Case("out-in-proc", PLAIN, ("render", "a", "--out", "/proc/profilekit-out"), 2, "profilekit: error: cannot write to output folder /proc/profilekit-out: No such file or directory"),
    Case("planted-script-symlink", PLAIN, RENDER, 0, "{out}/serve.sh", plant=link_to("victim", "serve.sh"), check=victim_intact("victim", "serve.sh")),
    Case("planted-env-symlink", PLAIN, RENDER, 0, "{out}/serve.env", plant=link_to("victim", "serve.env"), check=victim_intact("victim", "serve.env")),
    Case("planted-manifest-symlink", PLAIN, RENDER, 0, "{out}/manifest.json", plant=link_to("victim", "manifest.json"), check=victim_intact("victim", "manifest.json")),
    Case("planted-dangling-symlink", PLAIN, RENDER, 0, "{out}/serve.sh", plant=lambda out, tmp: (out / "serve.sh").unlink() or (out / "serve.sh").symlink_to(tmp / "created-by-render"), check=lambda root, out, tmp: None if not (tmp / "created-by-render").exists() and consistent(out) else pytest.fail("followed")),
    Case("planted-role-symlink-partial", PLAIN, ("render", "a", "--out", "{out}", "--role", "serve"), 0, "{out}/serve.sh", plant=link_to("victim", "serve.sh"), check=victim_intact("victim", "serve.sh")),
    Case("planted-folder-in-the-way", PLAIN, RENDER, 2, "profilekit: error: cannot write {out}/serve.env: a folder is in the way; the folder keeps the previous render", plant=folder("serve.env")),
    Case("manifest-lists-parent", PLAIN, RENDER, 0, "{out}/manifest.json", plant=manifest_listing("../victim", "sub/../../victim"), check=victim_kept),
    Case("manifest-lists-absolute", PLAIN, RENDER, 0, "{out}/manifest.json", plant=manifest_listing("{tmp}/victim"), check=victim_kept),
    Case("manifest-not-json", PLAIN, RENDER, 0, "{out}/manifest.json", plant=lambda out, tmp: (out / "manifest.json").write_bytes(b"\xff{["), check=lambda root, out, tmp: None if consistent(out) == {"serve.sh", "serve.env"} else pytest.fail("mixed")),
    Case("role-name-escapes-out", {"profiles/a.toml": '[serve]\nmodel = "m"\n[roles."../../escape".serve]\nport = 1\n'}, RENDER, 1, "roles", check=lambda root, out, tmp: None if not list(tmp.rglob("escape*")) else pytest.fail("escaped")),
    Case("role-name-slash", {"profiles/a.toml": '[serve]\nmodel = "m"\n[roles."a/b".serve]\nport = 1\n'}, RENDER, 1, "roles"),
    # ---- values the shell must not re-read: rendered, run with bash, nothing planted runs
    Case("argv-shell-metacharacters", {"profiles/a.toml": EVIL_ARGS}, RENDER, 0, "{out}/serve.sh", check=runs_clean(["vllm", "serve", "m; touch PWNED", "--served-model-name", "$(touch PWNED)", "`touch PWNED`"], {})),
    Case("env-shell-metacharacters", {"profiles/a.toml": '[serve]\nmodel = "m"\n' + EVIL_ENV}, RENDER, 0, "{out}/serve.env", check=runs_clean(["vllm", "serve", "m"], {"A": "$(touch PWNED)", "B": "line one\nline two", "C": '`touch PWNED` \\ "q"'})),
    Case("env-quote-and-dollar", {"profiles/a.toml": '[serve]\nmodel = "m"\n[env]\nX = "it\'s $HOME"\n'}, RENDER, 1, "profiles/a.toml:4:1: error env-unrepresentable env.X: no env-file syntax reads this value the same in bash and python-dotenv (a single quote together with `$` or a backtick, a `${...}` that python-dotenv would expand, or a NUL or carriage return)"),
    Case("env-dotenv-interpolation", {"profiles/a.toml": '[serve]\nmodel = "m"\n[env]\nX = "$${HOME}"\n'}, RENDER, 1, "env-unrepresentable"),
    Case("env-carriage-return", {"profiles/a.toml": '[serve]\nmodel = "m"\n[env]\nX = "a\\rb"\n'}, RENDER, 1, "env-unrepresentable"),
    # ---- secret-looking values: refused, and never repeated in any format
    *[
        Case(f"secret-api-key-{fmt}", {"profiles/a.toml": f'[serve]\nmodel = "m"\napi_key = "{TOKEN}"\n'}, ("check", "a", "--format", fmt), 1, "literal-secret", secret=TOKEN, previous=False)
        for fmt in ("text", "json", "github", "sarif")
    ],
    Case("secret-api-key-render", {"profiles/a.toml": f'[serve]\nmodel = "m"\napi_key = "{TOKEN}"\n'}, RENDER, 1, f"profiles/a.toml:3:1: error literal-secret serve.api_key {SECRET_LINE}", secret=TOKEN),
    Case("secret-kv-connector", {"profiles/a.toml": f'[serve]\nmodel = "m"\nkv_transfer_config = {{ kv_connector = "{TOKEN}", kv_role = "kv_both" }}\n'}, RENDER, 1, f"profiles/a.toml:3:24: error literal-secret serve.kv_transfer_config.kv_connector {SECRET_LINE}", secret=TOKEN),
    Case("secret-kv-connector-json", {"profiles/a.toml": f'[serve]\nmodel = "m"\nkv_transfer_config = {{ kv_connector = "{TOKEN}\\"x", kv_role = "kv_both" }}\n'}, ("check", "a", "--format", "json"), 1, '"rule": "literal-secret"', secret=TOKEN, previous=False),
    Case("secret-quoted-auth-token", {"profiles/a.toml": '[serve]\nmodel = "m"\nkv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_both", kv_connector_extra_config = { auth_token = "pa\\"ss\\\\wo rd-1234" } }\n'}, ("check", "a", "--format", "sarif"), 1, "kv_connector_extra_config.auth_token holds a literal value", secret='pa"ss', previous=False),
    Case("secret-hf-token-env", {"profiles/a.toml": f'[serve]\nmodel = "m"\n[env]\nHF_TOKEN = "{HF}"\n'}, RENDER, 1, "literal-secret", secret=HF),
    Case("secret-command-word", {"profiles/a.toml": '[serve]\nmodel = "m"\n[roles.p]\nkind = "command"\ncommand = ["x", "--api-key", "abc-secret-1234"]\n'}, RENDER, 1, f"profiles/a.toml:5:30: error literal-secret roles.p.command[2] {SECRET_LINE.replace('token-shaped', 'literal')}", secret="abc-secret-1234"),
    Case("secret-show-redacted", {"profiles/a.toml": f'[serve]\nmodel = "m"\napi_key = ["{TOKEN}"]\n'}, ("show", "a"), 0, 'api_key = ["<redacted>"]', secret=TOKEN, previous=False),
    Case("import-json-auth-token", {}, ("import", "--name", "x", "--", "vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"auth_token":"tok-9876543210"}}'), 2, "profilekit: error: cannot import the command line: serve.kv_transfer_config.kv_connector_extra_config.auth_token holds a credential, and profilekit keeps credentials out of layer files (the value is not shown here)", secret="tok-9876543210", previous=False, check=lambda root, out, tmp: None if not (root / "profiles/x.toml").exists() else pytest.fail("written")),
    Case("import-json-token-shaped", {}, ("import", "--name", "x", "--", "vllm", "serve", "m", "--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_connector_extra_config": {"peer": TOKEN}})), 2, "profilekit: error: cannot import the command line: serve.kv_transfer_config.kv_connector_extra_config.peer holds a credential, and profilekit keeps credentials out of layer files (the value is not shown here)", secret=TOKEN, previous=False),
    *[
        Case(f"secret-in-{place}-{how}", {"profiles/a.toml": text}, args, 1, "literal-secret", secret=secret, previous=how == "render")
        for place, (text, secret) in SECRET_PLACES.items()
        for how, args in (("render", RENDER), ("sarif", ("check", "a", "--format", "sarif")))
    ],
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_render(case: Case, run: Run, tmp_path: Path, stub_bin: Path) -> None:
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n' + case.config, encoding="utf-8")
    for name, text in case.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out"
    if case.previous:
        out.mkdir()
        for name, text in PREVIOUS.items():
            (out / name).write_text(text, encoding="utf-8")
        listed = [{"path": n, "sha256": hashlib.sha256(t.encode()).hexdigest()} for n, t in PREVIOUS.items()]
        (out / "manifest.json").write_text(json.dumps({"stack": "a", "files": listed}), encoding="utf-8")
    if case.plant is not None:
        case.plant(out, tmp_path)
    before = {"out": state(out), "tmp": {k: v for k, v in state(tmp_path).items() if not k.startswith("repo/")}}

    def fill(arg: str) -> str:
        return arg.replace("{out}", str(out)).replace("{tmp}", str(tmp_path))

    result = run("--repo", root, *[fill(a) for a in case.args], cwd=root)
    text = result.out + result.err
    assert result.code == case.code, result
    assert any(fill(case.message) in line for line in text.splitlines()), result
    assert "Traceback" not in text and "internal error" not in text, result
    if case.secret:
        assert case.secret not in text, result
        written = [p for p in tmp_path.rglob("*") if p.is_file() and "profiles" not in p.parts]
        assert not [p for p in written if case.secret.encode() in p.read_bytes()]
    if case.code != 0:  # nothing written, nothing half-written, nothing removed
        after = {"out": state(out), "tmp": {k: v for k, v in state(tmp_path).items() if not k.startswith("repo/")}}
        assert after == before
    if case.check is not None:
        case.check(root, out, tmp_path)
    assert not list(tmp_path.rglob("PWNED"))


INJECTED = "evil\ntouch PWNED\n#"


@pytest.mark.parametrize("spelling", ["name", "file"])
def test_layer_file_named_with_a_newline_injects_nothing(
    run: Run, tmp_path: Path, stub_bin: Path, spelling: str
) -> None:
    """A layer file `evil\\ntouch PWNED\\n#.toml`: its name reaches the header comments of the script and env file."""
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / f"{INJECTED}.toml").write_text('[serve]\nmodel = "m"\n[env]\nA = "1"\n', encoding="utf-8")
    out = tmp_path / "out"
    stack = INJECTED if spelling == "name" else f"profiles/{INJECTED}.toml"
    result = run("--repo", root, "render", stack, "--out", out, cwd=root)
    assert "Traceback" not in result.out + result.err
    if result.code != 0:  # a load that refuses such a name is as safe: then nothing may be written
        assert result.code in (1, 2) and not out.exists(), result
        return
    header = "# Generated by profilekit 0.1.0: stack evil\\ntouch PWNED\\n#, role serve, vLLM 0.33.0.\n"
    assert (out / "serve.sh").read_text(encoding="utf-8").splitlines(keepends=True)[1] == header
    assert (out / "serve.env").read_text(encoding="utf-8").splitlines(keepends=True)[0] == header
    runs_clean(["vllm", "serve", "m"], {"A": "1"})(root, out, tmp_path)


def test_comment_text_escapes_every_line_break() -> None:
    from profilekit.quoting import comment_text

    assert comment_text("a\nb\rc\u2028d\x00e\x1bf é 中") == "a\\nb\\rc\\u2028d\\x00e\\x1bf é 中"
    assert comment_text("site/h100+base") == "site/h100+base"


def test_stack_spec_with_line_breaks_stays_in_the_comment_of_every_output(tmp_path: Path) -> None:
    """Whatever the loader lets through, render writes a stack's name into comments escaped (up.sh too)."""
    from dataclasses import replace

    from profilekit.render.stack import render_stack
    from profilekit.session import Session

    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "pd.toml").write_text(PD["profiles/pd.toml"], encoding="utf-8")
    session = Session.open(repo=root, vllm_version=None, cwd=root)
    stack = replace(session.stack("pd"), spec="pd\rtouch PWNED\n#\u2028x")
    files, problems = render_stack(stack, version="0.33.0", catalogue=session.catalogue)
    assert problems == []
    for name in ("up.sh", "prefill.sh", "prefill.env", "decode.sh", "proxy.env"):
        lines = [line for line in files[name].text.splitlines() if "touch PWNED" in line]
        assert len(lines) == 1 and lines[0].startswith("# ") and "pd\\rtouch PWNED\\n#\\u2028x" in lines[0], name


@pytest.mark.parametrize("name", ["../escape.sh", "sub/escape.sh", "..", ".hidden.sh", "a\nb.sh", ""])
def test_outputs_are_plain_names_inside_out(tmp_path: Path, name: str) -> None:
    from profilekit.errors import UsageError
    from profilekit.output import Rendered, write_outputs

    with pytest.raises(UsageError) as caught:
        write_outputs(tmp_path / "out", {name: Rendered("x\n"), "manifest.json": Rendered("{}\n")})
    assert (
        str(caught.value)
        == f"refusing to write {name!r}: an output must be a plain file name inside {tmp_path / 'out'}"
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "escape.sh").exists()


def _cli(root: Path, *args: str, limit: int | None = None) -> subprocess.Popen[str]:
    """The CLI in a child process, optionally under a file size limit (RLIMIT_FSIZE)."""
    code = (
        "import resource, sys\n"
        f"limit = {limit!r}\n"
        "if limit is not None:\n"
        "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
        "from profilekit.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, "--repo", str(root), *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_file_size_limit_half_way_keeps_the_previous_render(tmp_path: Path) -> None:
    """prefill.* fit, decode.sh does not: the folder must keep the whole previous render, not a mix."""
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    layer = root / "profiles" / "pd.toml"
    layer.write_text(PD["profiles/pd.toml"] + '[roles.decode.env]\nBIG = "small"\n', encoding="utf-8")
    out = tmp_path / "out"
    first = _cli(root, "render", "pd", "--out", str(out))
    assert first.wait() == 0, first.communicate()
    before = state(out)
    layer.write_text(PD["profiles/pd.toml"].replace("8200", "8201") + f'[roles.decode.env]\nBIG = "{"x" * 300_000}"\n')
    proc = _cli(root, "render", "pd", "--out", str(out), limit=200_000)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 2, (stdout, stderr)
    assert stderr == (
        f"profilekit: error: cannot write {out}/decode.sh: File too large; the folder keeps the previous render\n"
        "  hint: free space (or raise the file size limit) and render again\n"
    )
    assert state(out) == before
    assert "Traceback" not in stderr


def test_concurrent_renders_into_one_folder_leave_one_complete_set(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "pd.toml").write_text(PD["profiles/pd.toml"], encoding="utf-8")
    (root / "profiles" / "a.toml").write_text('[serve]\nmodel = "m"\n[env]\nA = "1"\n', encoding="utf-8")
    out = tmp_path / "out"
    sets = {
        frozenset({"serve.sh", "serve.env"}),
        frozenset({"prefill.sh", "prefill.env", "decode.sh", "decode.env", "proxy.sh", "proxy.env", "up.sh"}),
    }
    for _round in range(4):
        procs = [_cli(root, "render", spec, "--out", str(out)) for spec in ("pd", "a", "pd", "a")]
        for proc in procs:
            stdout, stderr = proc.communicate()
            assert proc.returncode == 0, (stdout, stderr)
        assert frozenset(consistent(out)) in sets
        assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_render_waits_for_the_one_already_writing_the_folder(tmp_path: Path) -> None:
    """The folder is locked while a render writes it (the lock is on the folder that holds it, since the output
    folder itself is swapped for a new one): a second render waits, then writes its whole set."""
    import fcntl

    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "a.toml").write_text('[serve]\nmodel = "m"\n', encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a render in progress holds it
        proc = _cli(root, "render", "a", "--out", str(out))
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        assert not (out / "manifest.json").exists()
    finally:
        os.close(fd)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, (stdout, stderr)
    assert consistent(out) == {"serve.sh", "serve.env"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder whatever its mode")
def test_out_not_writable_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "a.toml").write_text('[serve]\nmodel = "m"\n', encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir(mode=0o555)
    result = run("--repo", root, "render", "a", "--out", out, cwd=root)
    assert result.code == 2, result
    assert result.err == (
        f"profilekit: error: cannot write to output folder {out}: Permission denied\n"
        "  hint: choose another folder with --out\n"
    )
    assert list(out.iterdir()) == []


def test_a_template_that_runs_too_long_is_stopped(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops the sandbox does not bound (100,000 x 100,000 iterations) are stopped by the time limit."""
    monkeypatch.setattr("profilekit.render.templating.TIME_LIMIT", 0.5)
    root = tmp_path / "repo"
    (root / "tt").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n' + TEMPLATES, encoding="utf-8")
    (root / "profiles" / "a.toml").write_text('[serve]\nmodel = "m"\n', encoding="utf-8")
    loops = "#!/bin/sh\n{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n"
    (root / "tt" / "launch.sh.j2").write_text(loops, encoding="utf-8")
    result = run("--repo", root, "render", "a", "--out", tmp_path / "out", cwd=root)
    assert result.code == 1, result
    assert result.out.splitlines()[0] == failed(2, "stopped: it runs longer than 0.5 s")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [("check", "a", "--format", "json"), ("render", "a", "--print"), ("flags",)])
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`profilekit check a | head -1`: the closed pipe is no internal error (it was exit 3 with a message)."""
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "a.toml").write_text('[serve]\nmodel = "m"\n', encoding="utf-8")
    proc = _cli(root, *args)
    assert proc.stdout is not None
    proc.stdout.close()
    _out, stderr = proc.communicate()
    assert (proc.returncode, stderr) == (141, "")
