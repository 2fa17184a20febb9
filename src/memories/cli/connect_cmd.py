"""connect / disconnect: register memories (and urchin) as MCP servers in an AI client's own
config, with a grant of their own.

The config editing lives in :mod:`memories.clients` (which never talks to the daemon); this
module mints and revokes the grant and writes its token file. Order matters: every config is
read and checked first, so a file that cannot be parsed stops ``connect`` before a grant is
minted; a grant minted by a run that then fails to write a config is revoked again.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors
from memories.cli.render import clean_line, console, emit_json
from memories.clients import CLIENT_NAMES, Client, Place, Scope, client
from memories.clients.claude_code import ClaudeCode, add_context_hook, remove_context_hook
from memories.clients.setup import (
    Change,
    Outcome,
    apply,
    connection_id,
    preview,
    servers_for,
    token_reference,
)
from memories.clients.tokens import remove_token, token_file, token_present, write_token
from memories.errors import DeniedError, NotFoundError, UsageError
from memories.paths import data_home

__all__ = ["grant_name"]

_SCOPES = ("user", "project", "local")
_GRANT_SCOPES = ("read", "write", "read_write", "read_write_delete", "allow_all")
_HOST = re.compile(r"[^A-Za-z0-9.-]+")
_MAX_GRANT_NAME = 64
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,32}")


def grant_name(connection: str, host: str) -> str:
    """The grant's name: ``<connection> on <host>``, within the 64 characters a name may have
    (the host is shortened first)."""
    clean = _HOST.sub("-", host).strip("-.") or "localhost"
    room = _MAX_GRANT_NAME - len(connection) - len(" on ")
    if room < 1:
        return connection[:_MAX_GRANT_NAME]
    return f"{connection} on {clean[:room]}"


def _place() -> Place:
    return Place(home=Path.home(), project=Path.cwd().resolve(), env=dict(os.environ))


def _commands(shared: bool) -> dict[str, str]:
    """The programs the client will start. A shared (project) file names them bare, as found
    on each user's PATH; a per-user file names them by absolute path, because editors started
    from a desktop often do not see the PATH of the shell memories was installed from."""
    found: dict[str, str] = {}
    here = Path(os.path.abspath(sys.argv[0])).parent if sys.argv and sys.argv[0] else None
    for name in ("memories", "urchin"):
        if shared:
            found[name] = name
            continue
        sibling = here / name if here is not None else None
        if sibling is not None and sibling.is_file() and os.access(sibling, os.X_OK):
            found[name] = str(sibling)
        else:
            which = shutil.which(name)
            if which is not None:
                found[name] = os.path.abspath(which)
            elif name == "memories":
                found[name] = name
    return found


def _adapter(name: str, scope: Scope, context_hook: bool) -> Client:
    adapter = client(name)
    adapter.check_scope(scope)
    if context_hook and not isinstance(adapter, ClaudeCode):
        raise UsageError("--context-hook is only for claude-code (a SessionStart hook)")
    return adapter


def _live(grant: dict[str, Any]) -> bool:
    if grant.get("revoked_at"):
        return False
    expires = grant.get("expires_at")
    if isinstance(expires, str) and expires:
        try:
            when = datetime.fromisoformat(expires.replace("Z", "+00:00"))
        except ValueError:
            return True
        return when > datetime.now(UTC)
    return True


def _grants_named(name: str) -> list[dict[str, Any]]:
    from memories.service.requests import GrantListRequest

    response = call(GrantListRequest(op="grant_list"))
    grants = response.get("grants", [])
    return [g for g in grants if isinstance(g, dict) and g.get("name") == name and _live(g)]


def _revoke(grant_id: str) -> None:
    from memories.service.requests import GrantRevokeRequest

    call(GrantRevokeRequest(op="grant_revoke", grant=grant_id))


def _vault_ids(vault: str | None) -> list[str]:
    """The ids of the vaults a grant for ``--vault`` would cover, found the way the daemon
    finds them (name, id or id prefix; none given: the personal vault), so that a grant for
    another vault is told apart before anything is revoked.

    Raises:
        NotFoundError: no vault has that name or id.
        UsageError: an id prefix fits more than one vault.
    """
    from memories.service.requests import VaultListRequest

    vaults = [v for v in call(VaultListRequest(op="vault_list")).get("vaults", []) if v]
    if vault is None:
        return [str(v["id"]) for v in vaults if v.get("personal")][:1]
    for info in vaults:
        if vault in (info.get("name"), info.get("id")):
            return [str(info["id"])]
    if _HEX_PREFIX.fullmatch(vault):
        found = [str(v["id"]) for v in vaults if str(v.get("id", "")).startswith(vault.lower())]
        if len(found) > 1:
            raise UsageError("that id prefix fits more than one vault; give more of it")
        if found:
            return found
    raise NotFoundError("no vault has that name; `memories vault list` shows them")


def _ensure_grant(
    name: str, vault: str | None, scope: str, token_path: Path
) -> tuple[dict[str, Any], bool]:
    """The live grant for this connection, minting one (and writing its token file) when there
    is none, when its token file is gone, or when it has another scope or other vaults.
    Returns the grant and whether it was minted now.

    Raises:
        DeniedError: the shell is not elevated (the message says to run `memories sudo`).
        NotFoundError: ``vault`` names no vault (nothing is revoked).
        UsageError: ``vault`` is an ambiguous id prefix (nothing is revoked).
    """
    from memories.service.requests import GrantCreateRequest, StatusRequest

    live = _grants_named(name)
    vault_ids = sorted(_vault_ids(vault))
    if (
        live
        and token_present(token_path)
        and all(
            g.get("scope") == scope and sorted(g.get("vaults") or []) == vault_ids for g in live
        )
    ):
        return live[-1], False
    # Names are unique among live grants, so the old one goes before the new one is minted;
    # check for elevation first, so a shell that cannot mint does not lose a working grant.
    if not call(StatusRequest(op="status")).get("elevated"):
        raise DeniedError(
            "minting a grant needs elevation: run `memories sudo`, then connect again"
        )
    for old in live:
        _revoke(str(old["id"]))
    try:
        response = call(
            GrantCreateRequest.model_validate(
                {
                    "op": "grant_create",
                    "name": name,
                    "vaults": [vault] if vault else [],
                    "scope": scope,
                    "expires_seconds": None,
                }
            )
        )
    except DeniedError as exc:
        if "sudo" in exc.message:
            raise
        raise DeniedError(
            f"{exc.message.rstrip('.')}; minting a grant needs elevation: run "
            "`memories sudo`, then connect again"
        ) from None
    write_token(token_path, str(response["token"]))
    return dict(response["grant"]), True


def _show(outcomes: list[Outcome], *, dry_run: bool) -> None:
    for outcome in outcomes:
        if outcome.action == "unchanged" and not outcome.path.exists():
            continue  # nothing there before, nothing to do: not worth a line
        verb = {"created": "create", "updated": "update", "unchanged": "leave"}[outcome.action]
        line = Text()
        if dry_run:
            line.append(f"would {verb} " if outcome.action != "unchanged" else "unchanged: ")
        else:
            line.append(f"{outcome.action}: " if outcome.action != "unchanged" else "unchanged: ")
        line.append(clean_line(str(outcome.path), 400), style="bold")
        line.append(f" ({outcome.label})", style="dim")
        console.print(line)
        if outcome.backup is not None:
            console.print(Text(f"  backup: {outcome.backup}", style="dim"))
        if dry_run and outcome.diff:
            console.print(Text(outcome.diff.rstrip("\n")), soft_wrap=True)


def _outcome_json(outcome: Outcome, *, dry_run: bool) -> dict[str, Any]:
    # The diff shows lines of the user's own config; only a dry run, which asks for it, says it.
    return {
        "path": str(outcome.path),
        "purpose": outcome.label,
        "action": outcome.action,
        "backup": None if outcome.backup is None else str(outcome.backup),
        "diff": outcome.diff if dry_run else None,
    }


def _grant_json(grant: dict[str, Any] | None) -> dict[str, Any] | None:
    if grant is None:
        return None
    keys = ("id", "name", "scope", "vaults", "created_at", "expires_at", "revoked_at")
    return {key: grant.get(key) for key in keys}


scope_option = click.option(
    "--scope",
    type=click.Choice(_SCOPES),
    default="user",
    show_default=True,
    help="Which of the client's configs: your own (user), the project's shared file "
    "(project, the current folder), or yours for this project only (local, claude-code).",
)


@cli.command("connect")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(CLIENT_NAMES))
@scope_option
@click.option("--vault", help="The vault the client may use [default: your personal vault].")
@click.option(
    "--grant-scope",
    type=click.Choice(_GRANT_SCOPES),
    default="read_write",
    show_default=True,
    help="What the client may do in that vault.",
)
@click.option("--dry-run", is_flag=True, help="Show the changes as a diff; change nothing.")
@click.option(
    "--context-hook",
    is_flag=True,
    help="claude-code: also run `memories context` at each session start (SessionStart hook).",
)
@json_option
@reports_errors
def connect_cmd(
    client_name: str,
    scope: Scope,
    vault: str | None,
    grant_scope: str,
    dry_run: bool,
    context_hook: bool,
    as_json: bool,
) -> None:
    """Let an AI client use your vault: mint it a grant and register `memories mcp` (and
    `urchin mcp`) in its config.

    CLIENT is claude-code, codex, cursor, opencode, gemini or vscode. Everything else in the
    config is kept as it was (comments too); the original is saved beside it as
    NAME.memories-backup-TIME. The token goes into a file only you can read
    (~/.local/share/memories/clients/); the config names that file, never the token.
    Running it again changes nothing. Minting needs elevation: run `memories sudo` first.

    \b
    Examples:
      memories sudo && memories connect claude-code
      memories connect codex --grant-scope read
      memories connect cursor --scope project --dry-run
      memories connect claude-code --context-hook
    """
    adapter = _adapter(client_name, scope, context_hook)
    place = _place()
    connection = connection_id(adapter, scope, place)
    token_path = token_file(data_home(), connection)
    target = adapter.target(scope, place)
    commands = _commands(target.shared)
    servers = servers_for(commands, token_reference(adapter, target, token_path, place.home))

    def edit_servers(text: str | None, where: Path) -> str:
        return adapter.connect(text, servers, scope, place, where)

    changes = [Change(target, "MCP servers", edit_servers)]
    if context_hook:
        assert isinstance(adapter, ClaudeCode)
        program = commands["memories"]
        changes.append(
            Change(
                adapter.settings_target(scope, place),
                "context hook",
                lambda text, where: add_context_hook(text, program, where),
            )
        )
    name = grant_name(connection, socket.gethostname())
    if dry_run:
        outcomes = preview(changes)
        if as_json:
            emit_json(
                {
                    "client": client_name,
                    "scope": scope,
                    "dry_run": True,
                    "files": [_outcome_json(o, dry_run=True) for o in outcomes],
                    "grant": {"name": name, "scope": grant_scope},
                    "token_file": str(token_path),
                }
            )
            return
        _show(outcomes, dry_run=True)
        console.print(
            Text(
                f"would mint grant {name!r} ({grant_scope}) unless it exists with its token "
                f"file {token_path}; nothing was changed",
                style="dim",
            )
        )
        return
    preview(changes)  # a file that cannot be parsed stops us before a grant is minted
    grant, minted = _ensure_grant(name, vault, grant_scope, token_path)
    finished = False
    try:
        outcomes = apply(changes)
        finished = True
    finally:
        if minted and not finished:
            _revoke(str(grant["id"]))
            remove_token(token_path)
    if as_json:
        emit_json(
            {
                "client": client_name,
                "scope": scope,
                "dry_run": False,
                "files": [_outcome_json(o, dry_run=False) for o in outcomes],
                "grant": {**(_grant_json(grant) or {}), "minted": minted},
                "token_file": str(token_path),
            }
        )
        return
    _show(outcomes, dry_run=False)
    state = "minted" if minted else "kept"
    console.print(
        Text(f"grant {name!r} ({grant.get('scope')}) {state}; token file {token_path} (0600)")
    )
    if minted or any(o.action != "unchanged" for o in outcomes):
        console.print(f"restart {adapter.title} to load the memories and urchin MCP servers")
    else:
        console.print(f"{adapter.title} was already connected; nothing changed")


@cli.command("disconnect")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(CLIENT_NAMES))
@scope_option
@click.option("--dry-run", is_flag=True, help="Show the changes as a diff; change nothing.")
@json_option
@reports_errors
def disconnect_cmd(client_name: str, scope: Scope, dry_run: bool, as_json: bool) -> None:
    """Undo `memories connect CLIENT`: remove our MCP servers (and claude-code's context hook)
    from the client's config, revoke its grant and delete its token file.

    Entries that are not ours are left alone, even when they share our names.

    \b
    Examples:
      memories disconnect claude-code
      memories disconnect cursor --scope project --dry-run
    """
    adapter = _adapter(client_name, scope, context_hook=False)
    place = _place()
    connection = connection_id(adapter, scope, place)
    token_path = token_file(data_home(), connection)
    target = adapter.target(scope, place)

    def edit_servers(text: str | None, where: Path) -> str:
        return adapter.disconnect(text, scope, place, where)

    changes = [Change(target, "MCP servers", edit_servers)]
    if isinstance(adapter, ClaudeCode):
        changes.append(
            Change(adapter.settings_target(scope, place), "context hook", remove_context_hook)
        )
    name = grant_name(connection, socket.gethostname())
    if dry_run:
        outcomes = preview(changes)
        if as_json:
            emit_json(
                {
                    "client": client_name,
                    "scope": scope,
                    "dry_run": True,
                    "files": [_outcome_json(o, dry_run=True) for o in outcomes],
                    "grant": {"name": name},
                    "token_file": str(token_path),
                }
            )
            return
        _show(outcomes, dry_run=True)
        console.print(Text(f"would revoke grant {name!r}; nothing was changed", style="dim"))
        return
    preview(changes)
    revoked = []
    for grant in _grants_named(name):
        _revoke(str(grant["id"]))
        revoked.append(grant)
    removed_token = remove_token(token_path)
    outcomes = apply(changes)
    if as_json:
        emit_json(
            {
                "client": client_name,
                "scope": scope,
                "dry_run": False,
                "files": [_outcome_json(o, dry_run=False) for o in outcomes],
                "revoked": [_grant_json(g) for g in revoked],
                "token_file_removed": removed_token,
            }
        )
        return
    _show(outcomes, dry_run=False)
    if revoked:
        console.print(Text(f"revoked grant {name!r}"))
    else:
        console.print(Text(f"no live grant named {name!r}", style="dim"))
