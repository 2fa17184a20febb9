"""config show|set|unset."""

from __future__ import annotations

import sys

import click

from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.cli.render import console, emit_json
from urchin.config import KEYS, set_config_value, unset_config_value


@cli.group()
def config() -> None:
    """Show or change settings in ~/.config/urchin/config.toml."""


@config.command("show")
@json_option
@reports_errors
def config_show(as_json: bool) -> None:
    """Show every setting, its value and where it came from (the token is never shown)."""
    settings = load()
    data = settings.public_json()
    if as_json:
        emit_json(data)
        return
    console.print(f"config file: {data['config_path']}")
    for key, value in data["values"].items():  # type: ignore[attr-defined]
        origin = settings.origins[key]
        console.print(f"{key:<17} {value if value is not None else '(unset)'}  [dim]{origin}[/]")


@config.command("set")
@click.argument("key", type=click.Choice(sorted(KEYS)))
@click.argument("value")
@json_option
@reports_errors
def config_set(key: str, value: str, as_json: bool) -> None:
    """Set KEY to VALUE in config.toml. Use - as VALUE to read it from standard input."""
    if value == "-":
        value = sys.stdin.readline().rstrip("\n")
    path = set_config_value(key, value)
    shown = "(set)" if KEYS[key].kind == "secret" else value
    if as_json:
        emit_json({"key": key, "value": shown, "config_path": str(path)})
    else:
        console.print(f"{key} = {shown}  ({path})")


@config.command("unset")
@click.argument("key", type=click.Choice(sorted(KEYS)))
@json_option
@reports_errors
def config_unset(key: str, as_json: bool) -> None:
    """Remove KEY from config.toml so its default applies."""
    path = unset_config_value(key)
    if as_json:
        emit_json({"key": key, "value": None, "config_path": str(path)})
    else:
        console.print(f"{key} unset  ({path})")
