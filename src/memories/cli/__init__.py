"""The ``memories`` command line.

Thin by design: parse, call the daemon over local IPC, render. The daemon starts on demand.
Errors go to stderr (or, with ``--json``, to stdout as ``{"ok": false, "error": {...}}``) with
the exit codes of :mod:`memories.errors`: 0 ok, 1 failed, 2 usage, 3 locked or denied. One
module per area (``*_cmd.py``) registers its commands here.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Final

import click

from memories import __version__
from memories.cli.common import DEBUG_ENV, CliState, fail, internal_message, wants_json
from memories.cli.render import error_console

__all__ = ["COMMAND_MODULES", "EXTENDED_BY", "cli", "load_all_commands", "main"]

#: Which module (``memories.cli.<module>``) registers each top-level command. A command's
#: module is imported only when that command runs (or help lists them all), so `memories
#: context` or `memories mcp` does not pay for every other command's imports at start-up.
COMMAND_MODULES: Final = {
    "archive": "backup_cmd", "backup": "backup_cmd",
    "ask": "rag_cmd", "rag": "rag_cmd", "retrieve": "rag_cmd",
    "audit": "audit_cmd", "verify": "audit_cmd",
    "card": "cards_cmd", "graph": "cards_cmd", "link": "cards_cmd", "unlink": "cards_cmd",
    "conflicts": "assets_cmd", "diff": "assets_cmd", "edit": "assets_cmd",
    "history": "assets_cmd", "ls": "assets_cmd", "put": "assets_cmd",
    "resolve": "assets_cmd", "rm": "assets_cmd", "show": "assets_cmd",
    "connect": "connect_cmd", "disconnect": "connect_cmd",
    "context": "context_cmd",
    "copy": "secrets_cmd", "otp": "secrets_cmd", "protect": "secrets_cmd",
    "protected-card": "secrets_cmd", "run": "secrets_cmd", "run-binding": "secrets_cmd",
    "credential": "files_cmd", "file": "files_cmd",
    "daemon": "daemon_cmd",
    "device": "devices_cmd", "identity": "devices_cmd", "member": "devices_cmd",
    "grant": "grants_cmd",
    "import": "import_cmd",
    "init": "store_cmd", "lock": "store_cmd", "passwd": "store_cmd",
    "status": "store_cmd", "sudo": "store_cmd", "unlock": "store_cmd",
    "inject": "inject_cmd",
    "mcp": "mcp_cmd",
    "quarantine": "sync_cmd", "sync": "sync_cmd",
    "search": "search_cmd",
    "vault": "vault_cmd",
}  # fmt: skip


#: Groups whose subcommands other modules add to (imported with the group's own module).
EXTENDED_BY: Final = {
    "credential": ("secrets_cmd",),  # generate, public
    "file": ("secrets_cmd",),  # exec
    "vault": ("devices_cmd",),  # export, import, share
}


def load_all_commands() -> None:
    """Import every command module, so :data:`cli` knows every command."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"memories.cli.{module}")


class _LazyGroup(click.Group):
    """A group that imports a command's module the first time the command is looked up."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for name in (module, *EXTENDED_BY.get(cmd_name, ())):
                importlib.import_module(f"memories.cli.{name}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_all_commands()
        return super().list_commands(ctx)


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
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
