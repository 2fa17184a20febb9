"""Command modules load on demand, and the command table names every command exactly once."""

from __future__ import annotations

import subprocess
import sys

import click

from memories.cli import COMMAND_MODULES, EXTENDED_BY, cli, load_all_commands


def _module(command: click.Command) -> str:
    assert command.callback is not None
    return command.callback.__module__.rsplit(".", 1)[-1]


def test_the_command_table_matches_what_the_modules_register() -> None:
    load_all_commands()
    assert {name: _module(command) for name, command in cli.commands.items()} == COMMAND_MODULES
    # A group's subcommands come from its own module or from the ones EXTENDED_BY names.
    for name, command in cli.commands.items():
        if isinstance(command, click.Group):
            sources = {_module(sub) for sub in command.commands.values()}
            assert sources <= {COMMAND_MODULES[name], *EXTENDED_BY.get(name, ())}, name
    for name, extra in EXTENDED_BY.items():
        group = cli.commands[name]
        assert isinstance(group, click.Group)
        assert set(extra) <= {_module(sub) for sub in group.commands.values()}, name


def _modules_loaded_by(*args: str) -> set[str]:
    probe = (
        "import sys\n"
        "from memories.cli import cli\n"
        f"try:\n    cli.main(args={list(args)!r}, prog_name='memories', standalone_mode=False)\n"
        "except SystemExit:\n    pass\n"
        "print(' '.join(m for m in sys.modules if m.startswith('memories.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(out.stdout.splitlines()[-1].split())


def test_a_command_loads_only_its_own_modules() -> None:
    loaded = _modules_loaded_by("mcp", "--help")
    assert {m for m in loaded if m.endswith("_cmd")} == {"memories.cli.mcp_cmd"}
    loaded = _modules_loaded_by("credential", "generate", "--help")
    commands = {m for m in loaded if m.endswith("_cmd")}
    assert commands == {"memories.cli.files_cmd", "memories.cli.secrets_cmd"}


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memories", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    listed = {
        line.split()[0]
        for line in out.stdout.split("Commands:", 1)[1].splitlines()
        if line.startswith("  ") and line.split()
    }
    assert listed == set(COMMAND_MODULES)
