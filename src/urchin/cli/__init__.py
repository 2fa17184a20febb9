"""The ``urchin`` command line.

Thin by design: parse, call the library, render. Errors go to stderr with the
exit codes of DESIGN §7 (1 failed, 2 usage); ``--json`` makes both results and
errors machine-readable.

Layout: this module holds the click group and the entry point; ``common`` the
shared options, settings loading and error reporting; ``render`` all human and
JSON output; one ``<area>_cmd`` module per area adds its commands to the group,
each imported by name at the bottom of this file. Heavy parts (the intake server,
the MCP SDK, the collectors) are imported inside the commands that run them, so
``urchin mcp`` starts no faster than the SDK allows and no slower.
"""

from __future__ import annotations

import os
import sys

import click

from urchin import __version__
from urchin.cli.render import error_console

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="urchin")
def cli() -> None:
    """urchin: capture what you and your AI agents do into an append-only journal.

    Events live in one JSONL file (~/.local/share/urchin/journal/events.jsonl by
    default). Every command accepts --json.
    """


def main() -> None:
    """Console-script entry point."""
    try:
        cli.main(prog_name="urchin")
    except KeyboardInterrupt:
        error_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:
        # A bug, not a user error: say so briefly; URCHIN_DEBUG=1 shows the traceback.
        if os.environ.get("URCHIN_DEBUG"):
            raise
        error_console.print(
            f"internal error ({type(exc).__name__}); run again with URCHIN_DEBUG=1 for details"
        )
        sys.exit(1)


# Registration by explicit import (each module adds its commands to ``cli``); the
# imports come last because every one of them needs ``cli`` defined.
from urchin.cli import (  # noqa: E402
    collect_cmd,
    config_cmd,
    doctor_cmd,
    ephemeral_cmd,
    index_cmd,
    intake_cmd,
    journal_cmd,
    mcp_cmd,
    serve_cmd,
    vault_cmd,
)

_COMMAND_MODULES = (
    collect_cmd,
    config_cmd,
    doctor_cmd,
    ephemeral_cmd,
    index_cmd,
    intake_cmd,
    journal_cmd,
    mcp_cmd,
    serve_cmd,
    vault_cmd,
)
