"""inject: install the memories skill (SKILL.md) where AI coding agents discover skills.

A CLI-only operation: no data home, store or daemon is involved, so it works before
``memories init`` and never asks for a password.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import json_option, reports_errors
from memories.cli.render import console, emit_json
from memories.errors import UsageError

__all__: list[str] = []

_CLIENT_CHOICES = ("claude-code", "codex", "opencode")
_PAST = {"create": "would create", "replace": "would replace", "unchanged": "unchanged"}


@cli.command("inject")
@click.option(
    "--client",
    "clients",
    type=click.Choice(_CLIENT_CHOICES),
    multiple=True,
    required=True,
    help="The agent to install the skill for (repeatable).",
)
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: your home's skill folders; project: the project folder's (share it with git).",
)
@click.option(
    "--project-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The project folder for --scope project [default: the current folder].",
)
@click.option("--force", is_flag=True, help="Replace a SKILL.md that differs from this release's.")
@click.option(
    "--legacy-codex",
    is_flag=True,
    help="Codex only: install in $CODEX_HOME/skills (~/.codex/skills), for Codex releases "
    "older than ~/.agents/skills, instead of ~/.agents/skills.",
)
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@json_option
@reports_errors
def inject_cmd(
    clients: tuple[str, ...],
    scope: str,
    project_dir: Path | None,
    force: bool,
    legacy_codex: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Install the memories skill for Claude Code, Codex or OpenCode.

    The skill (a SKILL.md in a `memories` skill folder) tells the agent when and how to search,
    cite, read and save memories through the memories MCP tools or this command line. It holds
    no path, vault id, token or secret of yours. Every target is checked before any is
    written: a link inside the skill folder, a file where a folder belongs or a SKILL.md that
    differs from this release's (without --force) stops the run with nothing written. An
    identical file is left alone; other skills and the client's settings are never touched.

    \b
    Where it goes:
      claude-code  ~/.claude/skills/memories/       project: .claude/skills/memories/
      codex        ~/.agents/skills/memories/       project: .agents/skills/memories/
      opencode     ~/.config/opencode/skills/memories/  project: .opencode/skills/memories/

    \b
    Examples:
      memories inject --client claude-code
      memories inject --client codex --client opencode --scope project
      memories inject --client claude-code --force --json
    """
    from memories.skills import bundled_skill, install, plan, target_for

    if legacy_codex and "codex" not in clients:
        raise UsageError("--legacy-codex applies to the codex client only")
    skill = bundled_skill()
    targets = [
        target_for(
            client,
            scope,
            project_dir=project_dir,
            legacy_codex=legacy_codex and client == "codex",
        )
        for client in clients
    ]
    rows: list[tuple[str, str, str, str]]
    if dry_run:
        rows = [
            (item.target.client, item.target.scope, str(item.target.file), item.action)
            for item in plan(targets, force=force, skill=skill)
        ]
    else:
        rows = [
            (item.target.client, item.target.scope, str(item.target.file), item.result)
            for item in install(targets, force=force, skill=skill)
        ]
    if as_json:
        emit_json(
            {
                "skill": skill.name,
                "version": skill.version,
                "dry_run": dry_run,
                "targets": [
                    {"client": client, "scope": where, "path": path, "result": result}
                    for client, where, path, result in rows
                ],
            }
        )
        return
    for client, _where, path, result in rows:
        line = Text()
        line.append(_PAST[result] if dry_run else result, style="bold")
        line.append(f"  {client}  ")
        line.append(path, style="cyan")
        console.print(line, highlight=False, soft_wrap=True)
    if not dry_run:
        console.print(
            Text(f"memories skill v{skill.version}; restart the agent to load it", style="dim")
        )
