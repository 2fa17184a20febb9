"""Pieces every urchin command shares: --json, error reporting, settings."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from urchin.cli.render import error_console
from urchin.config import Settings, load_settings
from urchin.errors import UrchinError
from urchin.recorder import Recorder

__all__ = ["json_option", "load", "recorder", "reports_errors"]

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table."
)


def reports_errors(func: F) -> F:
    """Turn UrchinError into a one-line message on stderr and the error's exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UrchinError as exc:
            fail(exc.message, exc.code, exc.exit_code, bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


def fail(message: str, code: str, exit_code: int, as_json: bool) -> None:
    """Report an error on stderr (JSON with --json) and exit."""
    if as_json:
        sys.stderr.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        error_console.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    sys.exit(exit_code)


def load() -> Settings:
    return load_settings()


def recorder(current: Settings, *, durable: bool = True) -> Recorder:
    """The write path for these settings: ephemeral and ignore checks, redaction, journal.

    Raises:
        ConfigError: a configured redaction pattern is invalid.
    """
    return Recorder.from_settings(current, durable=durable)
