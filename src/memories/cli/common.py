"""Pieces every memories command shares: --json, error reporting, the daemon connection,
passwords and text input."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from memories.cli.render import emit_json, error_console
from memories.config import Settings, load_settings
from memories.errors import LockedError, MemoriesError, UsageError
from memories.ipc import IpcClient

if TYPE_CHECKING:
    from pydantic import ValidationError

    from memories.service.requests import RequestModel

__all__ = [
    "DEBUG_ENV",
    "PASSWORD_ENV",
    "CliState",
    "call",
    "card_metadata",
    "fail",
    "internal_message",
    "json_option",
    "read_password",
    "read_stdin_line",
    "read_stdin_text",
    "reports_errors",
    "settings",
    "short_ref",
    "state",
    "usage_error",
    "vault_option",
    "wants_json",
    "wire_request",
]

DEBUG_ENV = "MEMORIES_DEBUG"
PASSWORD_ENV = "MEMORIES_PASSWORD"  # noqa: S105 - the variable's name, not a password

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text."
)

vault_option = click.option(
    "--vault", help="Vault name, id or id prefix [default: your personal vault]."
)


def wants_json(args: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (before ``--``, which ends the options)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _take_secret_variables() -> dict[str, str]:
    """Move every ``MEMORIES_*`` variable that holds a secret out of the environment.

    Taken as soon as a command starts, so no child (the daemon, $EDITOR, a program run with a
    file) inherits a password, and ``/proc/<pid>/environ`` no longer shows it where the C
    library lets it be overwritten.
    """
    from memories.daemon.environment import is_secret_name, take_variable

    taken: dict[str, str] = {}
    for name in [n for n in os.environ if n.startswith("MEMORIES_") and is_secret_name(n)]:
        value = take_variable(name)
        if value:
            taken[name] = value
    return taken


@dataclass
class CliState:
    """What the group options decided, the one daemon connection of this invocation, and the
    secrets it took from the environment."""

    autostart: bool = True
    _settings: Settings | None = None
    _client: IpcClient | None = field(default=None, repr=False)
    _secrets: dict[str, str] = field(default_factory=_take_secret_variables, repr=False)

    def secret(self, name: str) -> str | None:
        """The value the secret variable ``name`` had when the command started, or None."""
        return self._secrets.get(name)

    def settings(self) -> Settings:
        """The resolved settings. Raises ``UsageError`` for a bad config file or variable."""
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def client(self) -> IpcClient:
        """The daemon connection, starting the daemon first when allowed.

        Raises:
            UnavailableError: no daemon is running and autostart is off, or it cannot start.
        """
        if self._client is None:
            # Imported here so `memories --help` and the daemon commands stay quick.
            from memories.daemon.launcher import connect

            self._client = connect(self.settings(), autostart=self.autostart, notify=_notify)
        return self._client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


def _notify(message: str) -> None:
    error_console.print(message, markup=False)


def state() -> CliState:
    """The ``CliState`` of the running command (a fresh one outside the ``memories`` group)."""
    ctx = click.get_current_context()
    found = ctx.find_object(CliState)
    if found is None:
        found = ctx.ensure_object(CliState)
        ctx.call_on_close(found.close)
    return found


def settings() -> Settings:
    """The settings of this invocation. Raises ``UsageError`` when they are invalid."""
    return state().settings()


def wire_request(request: RequestModel) -> dict[str, Any]:
    """The object the wire carries for ``request``.

    Fields left at their default (``None`` for optional ones) are left out, as the daemon
    applies the same defaults. Secret fields carry their value: pydantic's own JSON dump masks
    ``SecretStr`` as asterisks, so the plain dump is walked and each secret revealed here, the
    one place that does it. ``parse_request`` turns the result back into an equal model.
    """
    from pydantic import SecretStr

    def reveal(value: object) -> object:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if isinstance(value, dict):
            return {key: reveal(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [reveal(item) for item in value]
        return value

    dumped = request.model_dump(mode="python", exclude_defaults=True)
    return {key: reveal(value) for key, value in dumped.items()}


def call(request: RequestModel, *, timeout: float | None = None) -> dict[str, Any]:
    """Send one typed request to the daemon and return its response object.

    ``timeout`` (seconds) replaces the usual limit for this call, for requests that take time
    in proportion to the store (key rotation, whole-store verification).

    Raises:
        MemoriesError: the subclass the daemon reported, or ``UnavailableError`` when it cannot
            be reached or did not answer in time.
    """
    return state().client().call(wire_request(request), timeout=timeout)


def usage_error(exc: ValidationError) -> UsageError:
    """The ``UsageError`` for a request model the command line could not build.

    Worded as the daemon words the same mistake (op, field path and what was expected, never
    the value), by the request parser's own formatter.
    """
    from memories.service.requests import REQUEST_TYPES, op_name
    from memories.service.requests.parse import validation_message

    message = validation_message(exc)
    ops = {model.__name__: op_name(model) for model in REQUEST_TYPES}
    op = ops.get(exc.title)
    if op is not None and message.startswith("request: "):
        message = f"{op}: " + message.removeprefix("request: ")
    return UsageError(message)


def internal_message(exc: BaseException) -> str:
    """The one line shown for a bug: the exception type only, never its text."""
    return f"internal error ({type(exc).__name__}); run again with {DEBUG_ENV}=1 for details"


def fail(message: str, code: str, exit_code: int, *, as_json: bool) -> NoReturn:
    """Report an error (JSON on stdout with --json, a line on stderr otherwise) and exit."""
    if as_json:
        emit_json({"ok": False, "error": {"code": code, "message": message}})
    else:
        error_console.print(f"[bold red]error:[/] {_escape(message)}", highlight=False)
    sys.exit(exit_code)


def _escape(text: str) -> str:
    return text.replace("[", r"\[")


def _message(exc: MemoriesError) -> str:
    if isinstance(exc, LockedError) and "memories unlock" not in exc.message:
        return f"{exc.message.rstrip('.')}; run `memories unlock`"
    return exc.message


def _as_usage_error(exc: ValueError) -> UsageError | None:
    """A request model the options could not make, as a ``UsageError``; None for anything else.

    pydantic is looked up among the loaded modules rather than imported: when it is not loaded
    no model was built, and `memories --help` does not pay for importing it.
    """
    core = sys.modules.get("pydantic_core")
    if core is not None and isinstance(exc, core.ValidationError):
        return usage_error(exc)
    return None


def reports_errors(func: F) -> F:
    """Turn a MemoriesError into its message and exit code, and a request model that could not
    be built into a usage error (exit 2). Anything else is a bug and goes on to ``main``, which
    prints one "internal error" line (never a traceback or its text)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return func(*args, **kwargs)
        except MemoriesError as exc:
            fail(_message(exc), exc.code, exc.exit_code, as_json=as_json)
        except ValueError as exc:  # pydantic's ValidationError is one; nothing else is caught
            error = _as_usage_error(exc)
            if error is None:
                raise
            fail(error.message, error.code, error.exit_code, as_json=as_json)

    return wrapper  # type: ignore[return-value]


# -- input ------------------------------------------------------------------------------------


def read_stdin_text() -> str:
    """All of standard input as UTF-8 text. Raises ``UsageError`` when it is not UTF-8."""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("standard input is not UTF-8 text") from None


def read_stdin_line(what: str) -> str:
    """One line of standard input without its line break.

    Raises:
        UsageError: standard input ended first or is not UTF-8 (the line is never quoted).
    """
    raw = sys.stdin.buffer.readline()
    if not raw:
        raise UsageError(f"expected the {what} on standard input, but it ended")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the {what} on standard input is not UTF-8 text") from None
    return text.removesuffix("\n").removesuffix("\r")


def read_password(
    what: str,
    *,
    from_stdin: bool,
    env: str | None = PASSWORD_ENV,
    confirm: bool = False,
) -> str:
    """A password from standard input, the environment variable ``env`` (as it was when the
    command started: it is removed from the environment then), or a hidden prompt.

    Raises:
        UsageError: the password is empty or cannot be read.
    """
    from_env = state().secret(env) if env is not None else None
    if from_stdin:
        password = read_stdin_line(what)
    elif from_env:
        password = from_env
    elif not sys.stdin.isatty():
        hint = f"set {env} or " if env else ""
        raise UsageError(f"no terminal to ask for the {what}; {hint}pass --password-stdin")
    else:
        password = click.prompt(
            what[:1].upper() + what[1:],
            hide_input=True,
            confirmation_prompt=f"Repeat the {what}" if confirm else False,
            err=True,
        )
    if not password:
        raise UsageError(f"the {what} must not be empty")
    return password


# -- cards ------------------------------------------------------------------------------------


def card_metadata(card_type: str, pairs: Sequence[str], vault: str | None) -> dict[str, Any]:
    """Parse ``--meta key=value`` options with the schema of ``card_type`` from the daemon.

    Values are typed by the card type's fields (integers, numbers, booleans, dates, comma
    separated lists), so ``--meta confidence=0.9`` arrives as a number. A blank value clears
    the field. (Typed loosely: the request model checks the values again.)

    Raises:
        UsageError: the card type is unknown, a pair is not ``key=value``, names an unknown
            field, or its value does not fit the field (the message never quotes the value).
    """
    from memories.service.requests import CardTypesRequest
    from memories.views.cards import CardType, parse_metadata_assignments

    response = call(CardTypesRequest(op="card_types", vault=vault))
    for doc in response.get("card_types", []):
        if isinstance(doc, dict) and doc.get("name") == card_type:
            return parse_metadata_assignments(CardType.from_dict(doc), pairs)
    raise UsageError("unknown card type; `memories card types` lists them")


def short_ref(response: dict[str, Any], key: str = "asset") -> str:
    """The short id the daemon sent for ``key`` (``short_id`` for the asset), else the id's
    first 8 hex digits."""
    names = ("short_id", f"short_{key}") if key == "asset" else (f"short_{key}",)
    for name in names:
        value = response.get(name)
        if isinstance(value, str) and value:
            return value
    return str(response.get(key, "")).removeprefix("sha256:")[:8]
