"""The ``memories`` command line. The vault commands arrive with the vault itself."""

from __future__ import annotations

import click

from memories import __version__

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memories")
def cli() -> None:
    """memories: an encrypted, signed memory vault for you and your AI agents."""


def main() -> None:
    """Console-script entry point."""
    cli.main(prog_name="memories")
