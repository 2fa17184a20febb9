"""The ``urchin`` command line.

Thin by design: parse, call the library, render. Errors go to stderr with the
exit codes of DESIGN §7 (1 failed, 2 usage); ``--json`` makes both results and
errors machine-readable. One module per area registers its commands here.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path

import click

from urchin import __version__
from urchin.render import error_console

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


def _register_commands() -> None:
    """Import every ``*_cmd`` module in this package; each adds its commands to ``cli``."""
    package_dir = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(package_dir)]), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"{__name__}.{info.name}")


_register_commands()
