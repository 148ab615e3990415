"""The Jinja sandbox that renders templates, and a failing team template turned into a finding with its line.

A team's templates folder is code from the repository that profilekit runs on someone's machine and in CI:
whatever it does at render time (an undefined name, `1 // 0`, `range(10**9)`, a recursive `include`, bytes
that are not UTF-8, a reach for Python internals or the file system) ends as a `template-error` finding that
names the template's file and line, and nothing is written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from jinja2 import (
    ChoiceLoader,
    FileSystemLoader,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
)
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from profilekit.errors import Finding, Location, Severity
from profilekit.quoting import comment_text, shell_quote

if TYPE_CHECKING:
    from jinja2.runtime import Context

# the largest string, list or number a template may build with `*` or `**` (the sandbox bounds `range` alone)
MAX_SIZE = 1_000_000
MAX_EXPONENT_BITS = 64_000
# what one rendered file may hold, and how long one template may run (loops the sandbox does not bound)
MAX_OUTPUT = 10_000_000
TIME_LIMIT = 10.0


class TemplateLimit(Exception):
    """A template went past MAX_OUTPUT or TIME_LIMIT."""


class TemplateFailure(Exception):
    """A template that could not render: the finding to report instead of its files."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class Sandbox(SandboxedEnvironment):
    """Jinja's sandbox, also bounding `*` and `**` so that a template cannot exhaust memory or time with one."""

    intercepted_binops = frozenset({"*", "**"})
    # the repository root, so that a failure names the template's file relative to it
    root: Path | None = None
    # folders of sources' files, by the prefix their files are named with (`platform@3f2a9c1:`)
    labels: dict[Path, str] = {}  # noqa: RUF012 - replaced whole per environment, never mutated

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and _big_power(left, right):
            raise SecurityError(f"{left!r} ** {right!r} is too large to compute in a template")
        if operator == "*" and _big_repeat(left, right):
            raise SecurityError(f"a repetition of more than {MAX_SIZE} items is refused in a template")
        return super().call_binop(context, operator, left, right)


def _big_power(base: Any, exponent: Any) -> bool:
    if not isinstance(base, int) or not isinstance(exponent, int) or abs(base) < 2 or exponent < 0:
        return False
    return exponent * abs(base).bit_length() > MAX_EXPONENT_BITS


def _big_repeat(left: Any, right: Any) -> bool:
    for items, times in ((left, right), (right, left)):
        if isinstance(items, (str, list, tuple)) and isinstance(times, int) and len(items) * times > MAX_SIZE:
            return True
    return False


def environment(folders: list[Path], *, root: Path | None = None, labels: dict[Path, str] | None = None) -> Sandbox:
    """A sandbox that looks templates up in `folders`, first match wins; `sh` and `comment` quote for templates."""
    env = Sandbox(
        loader=ChoiceLoader([FileSystemLoader(str(folder)) for folder in folders]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["sh"] = shell_quote
    env.filters["comment"] = comment_text
    env.filters["to_yaml"] = to_yaml
    env.root = root
    env.labels = dict(labels or {})
    return env


def render_template(env: Sandbox, name: str, context: dict[str, Any]) -> str:
    """Render one template; anything it raises becomes a `TemplateFailure` naming its file and line."""
    template: Template | None = None
    try:
        template = env.get_template(name)
        return _bounded(template, context)
    except (Exception, RecursionError) as exc:  # a team template is code: every failure of it is its author's
        file, line = _where(exc, template.filename or name if template is not None else name)
        raise TemplateFailure(
            Finding(
                "template-error",
                Severity.ERROR,
                f"template {_shown(file, env)} failed at line {line}: {_reason(exc)}"
                if line
                else f"template {_shown(file, env)} failed: {_reason(exc)}",
                [Location(_shown(file, env), line or 1, 1)],
                fix="fix the template; templates can use: " + ", ".join(sorted(context)),
            )
        ) from None


def has_template(env: Sandbox, name: str) -> bool:
    """Whether the sandbox finds a template `name` (one that fails to compile is found: render_template says why)."""
    try:
        env.get_template(name)
    except TemplateNotFound:
        return False
    except (Exception, RecursionError):  # a team template is code: rendering it reports the failure
        return True
    return True


def output_failure(env: Sandbox, name: str, reason: str, *, fix: str) -> TemplateFailure:
    """A template that rendered, but into a file the target cannot write: the finding names the template file."""
    shown = _shown(env.get_template(name).filename or name, env)
    return TemplateFailure(
        Finding("template-error", Severity.ERROR, f"template {shown} {reason}", [Location(shown, 1, 1)], fix=fix)
    )


def to_yaml(value: Any) -> str:
    """The `to_yaml` filter: a value as block YAML, keys in their order, no anchors, one line per scalar."""
    import yaml  # noqa: PLC0415 - only a template that uses the to_yaml filter (the k8s target)

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # repeated labels are written in full: no `&id001` anchors for a reader to chase

    text: str = yaml.dump(value, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1 << 20)
    return text


def _bounded(template: Template, context: dict[str, Any]) -> str:
    """The rendered text, stopped once it passes MAX_OUTPUT characters or runs past TIME_LIMIT seconds."""
    parts: list[str] = []
    size = 0
    with _deadline(TIME_LIMIT):
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise TemplateLimit(f"its output passes {MAX_OUTPUT:,} characters")
            parts.append(chunk)
    return "".join(parts)


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the template after `seconds` (SIGALRM: only on the main thread, and never over another timer)."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TemplateLimit(f"it runs longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "it recurses without end (an include or macro that calls itself?)"
    if isinstance(exc, UnicodeDecodeError):
        return f"the file is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
    if isinstance(exc, TemplateLimit):
        return f"stopped: {exc}"
    if isinstance(exc, SecurityError):
        return f"refused by the sandbox: {exc}"
    if isinstance(exc, TemplateError):
        message = exc.message or type(exc).__name__
        return f"template {message!r} not found" if type(exc).__name__ == "TemplateNotFound" else message
    return f"{type(exc).__name__}: {comment_text(str(exc))}" if str(exc) else type(exc).__name__


def _where(exc: BaseException, name: str) -> tuple[str, int]:
    """The template file and line that raised: the syntax error's own, else the innermost template frame."""
    if isinstance(exc, TemplateSyntaxError) and exc.filename:
        return exc.filename, exc.lineno or 0
    found: tuple[str, int] = (name, 0)
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "get_source" and isinstance(read := tb.tb_frame.f_locals.get("filename"), str):
            found = (read, _decode_line(exc))  # the loader failed reading this file: it is not UTF-8
        elif not code.co_filename.endswith(".py") and not code.co_filename.startswith("<"):
            found = (code.co_filename, tb.tb_lineno)  # Jinja rewrites a template's frames to its file and line
        tb = tb.tb_next
    return found


def _decode_line(exc: BaseException) -> int:
    """The line of the first byte that is not UTF-8."""
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        return exc.object[: exc.start].count(b"\n") + 1
    return 0


def _shown(file: str, env: Sandbox) -> str:
    """A template's file relative to the repository root where it lies inside it (or inside a source)."""
    bases = [(env.root, "")] if env.root is not None else []
    for base, prefix in [*bases, *env.labels.items()]:
        try:
            return prefix + Path(file).resolve().relative_to(base.resolve()).as_posix()
        except (ValueError, OSError):
            pass
    return file


__all__ = [
    "MAX_SIZE",
    "Sandbox",
    "TemplateFailure",
    "environment",
    "has_template",
    "output_failure",
    "render_template",
    "to_yaml",
]
