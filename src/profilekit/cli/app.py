"""The typer app and its global options; what every command shares is in `cli.common` (typer-free, for the
fast path), re-exported here for the command modules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from profilekit import __version__
from profilekit.cli.common import (
    GLOBAL_FLAGS,
    GLOBAL_VALUED,
    G,
    check_format,
    err,
    exit_for,
    hoist_global_options,
    open_session,
    out,
    print_findings,
    redactor,
    release_without_layers,
    run_command,
    set_globals,
    target_release,
    warn,
)

__all__ = [
    "GLOBAL_FLAGS",
    "GLOBAL_VALUED",
    "G",
    "app",
    "check_format",
    "command",
    "err",
    "exit_for",
    "hoist_global_options",
    "open_session",
    "out",
    "print_findings",
    "redactor",
    "release_without_layers",
    "target_release",
    "warn",
]


class _Group(TyperGroup):
    """The command group: global options are accepted after the command too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # click.Context (vendored by typer)
        return super().parse_args(ctx, hoist_global_options(args))


app = typer.Typer(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Compose typed vLLM deployment profiles, check them against vLLM's own rules, render launch scripts.\n\n"
    "--repo, --vllm-version and --debug may also follow the command.",
)

F = TypeVar("F", bound=Callable[..., Any])


def command(fn: F) -> F:
    """Run a command; map domain errors to messages and exit codes (`common.run_command`), never to a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        raise typer.Exit(run_command(fn, *args, **kwargs))

    return wrapper  # type: ignore[return-value]


def _version_callback(value: bool) -> None:
    if value:
        out(f"profilekit {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    repo: Annotated[
        Path | None, typer.Option("--repo", help="Profile repository root (default: search upwards).")
    ] = None,
    vllm_version: Annotated[
        str | None, typer.Option("--vllm-version", help="Target vLLM release (default: [vllm] version).")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the cache (PROFILEKIT_CACHE_DIR).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    set_globals(repo=repo, vllm_version=vllm_version, debug=debug, no_cache=no_cache)
