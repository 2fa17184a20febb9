"""The ``memories`` command line.

Thin by design: parse, call the daemon over local IPC, render. The daemon starts on demand.
Errors go to stderr (or, with ``--json``, to stdout as ``{"ok": false, "error": {...}}``) with
the exit codes of :mod:`memories.errors`: 0 ok, 1 failed, 2 usage, 3 locked or denied. One
module per area (``*_cmd.py``) registers its commands here.
"""

from __future__ import annotations

import os
import sys

import click

from memories import __version__
from memories.cli.common import DEBUG_ENV, CliState, fail, internal_message, wants_json
from memories.cli.render import error_console

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="memories")
@click.option(
    "--no-daemon-autostart",
    is_flag=True,
    envvar="MEMORIES_NO_AUTOSTART",
    help="Fail instead of starting the daemon when none is running (also MEMORIES_NO_AUTOSTART=1).",
)
@click.pass_context
def cli(ctx: click.Context, no_daemon_autostart: bool) -> None:
    """memories: an encrypted, signed memory vault for you and your AI agents.

    Everything lives in one encrypted store (~/.local/share/memories by default). A small
    background daemon holds it open; the first command that needs it starts it and says so.
    Every command accepts --json.

    \b
    Getting started:
      memories init                      # choose a password, create the store
      memories put "Deploys need the VPN" --tag ops
      memories ls
      memories show 1a2b3c4d
      memories lock                      # forget the keys until `memories unlock`

    Exit codes: 0 ok, 1 failed, 2 usage error, 3 locked or denied.
    """
    ctx.obj = CliState(autostart=not no_daemon_autostart)
    ctx.call_on_close(ctx.obj.close)


def main() -> None:
    """Console-script entry point."""
    args = sys.argv[1:]
    as_json = wants_json(args)
    try:
        result = cli.main(args=args, prog_name="memories", standalone_mode=False)
    except click.exceptions.Abort:
        fail("aborted", "error", 1, as_json=as_json)
    except click.ClickException as exc:
        if as_json:
            code = "invalid_input" if exc.exit_code == 2 else "error"
            fail(exc.format_message(), code, exc.exit_code, as_json=True)
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader went away (`memories ls | head`): stop quietly, as other tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except KeyboardInterrupt:
        error_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:
        # A bug, not a user error: say so briefly; MEMORIES_DEBUG=1 shows the traceback.
        if os.environ.get(DEBUG_ENV):
            raise
        fail(internal_message(exc), "error", 1, as_json=as_json)
    sys.exit(result if isinstance(result, int) else 0)


# Each command module adds its commands to ``cli`` when imported; the list is explicit so a
# new module is registered on purpose, in one visible place.
from memories.cli import (  # noqa: E402, F401 - importing a module registers it
    assets_cmd,
    audit_cmd,
    backup_cmd,
    cards_cmd,
    connect_cmd,
    context_cmd,
    daemon_cmd,
    devices_cmd,
    files_cmd,
    grants_cmd,
    import_cmd,
    inject_cmd,
    mcp_cmd,
    rag_cmd,
    search_cmd,
    secrets_cmd,
    store_cmd,
    sync_cmd,
    vault_cmd,
)
