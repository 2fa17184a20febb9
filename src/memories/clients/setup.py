"""Planning and applying config edits, and the identity of one connection.

Every edit is a pure function from a file's text to its new text. :func:`preview` reads each
file and computes its new text and diff without writing anything; :func:`apply` previews all
of them first (so a file that cannot be parsed stops the whole run before any write), then
publishes each changed file after backing it up. A client that rewrites its file between our
read and our rename makes us start that file over (a few times, then give up).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memories.clients.base import Client, Place, Scope, Server, Target, home_relative
from memories.clients.errors import ConfigChangedError
from memories.clients.files import (
    ConfigFile,
    backup,
    read_config,
    replace_config,
    unified_diff,
)

__all__ = [
    "Change",
    "Outcome",
    "apply",
    "connection_id",
    "preview",
    "servers_for",
    "token_reference",
]

_ATTEMPTS = 3
_SLUG = re.compile(r"[^a-z0-9._-]+")


@dataclass(frozen=True)
class Change:
    """One file to edit: what it is for (``label``) and how its text changes."""

    target: Target
    label: str
    edit: Callable[[str | None, Path], str]

    @property
    def new_mode(self) -> int:
        # A project file is shared and meant to be read; a user file may hold private settings.
        return 0o644 if self.target.shared else 0o600


@dataclass(frozen=True)
class Outcome:
    """What happened (or, in a preview, would happen) to one file."""

    path: Path
    label: str
    action: Literal["created", "updated", "unchanged"]
    diff: str
    backup: Path | None = None


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-") or "project"


def connection_id(client: Client, scope: Scope, place: Place) -> str:
    """A stable name for this client at this scope, used for the grant and its token file.

    A project or local connection adds a short hash of the project folder's absolute path to
    its name, so two projects with the same folder name never share a grant or token file;
    the same folder always gives the same name, so connecting again changes nothing.
    """
    if scope == "user":
        return client.name
    # Cut so the hash survives the 64 characters a grant name may have (with " on <host>").
    folder = _slug(place.project.name)[:24].rstrip("-") or "project"
    digest = hashlib.sha256(str(place.project).encode("utf-8")).hexdigest()[:8]
    return f"{client.name}-{scope}-{folder}-{digest}"


def token_reference(client: Client, target: Target, token_file: Path, home: Path) -> str:
    """How the config names the token file: as is in a per-user file; in a shared file
    relative to the home folder in the client's own variable syntax."""
    if not target.shared:
        return str(token_file)
    return home_relative(token_file, home, client.home_variable)


def servers_for(
    commands: Mapping[str, str], token_ref: str, *, with_urchin: bool = True
) -> list[Server]:
    """The servers we register: ``memories mcp --token-file REF`` and ``urchin mcp``."""
    servers = [Server("memories", commands["memories"], ("mcp", "--token-file", token_ref))]
    if with_urchin and "urchin" in commands:
        servers.append(Server("urchin", commands["urchin"], ("mcp",)))
    return servers


def _compute(change: Change) -> tuple[Outcome, str, ConfigFile]:
    config = read_config(change.target.path, project_root=change.target.project_root)
    new_text = change.edit(config.text, change.target.path)
    if new_text == (config.text or "") and (config.text is not None or not new_text):
        return Outcome(change.target.path, change.label, "unchanged", ""), new_text, config
    action: Literal["created", "updated"] = "created" if config.text is None else "updated"
    diff = unified_diff(config, new_text)
    return Outcome(change.target.path, change.label, action, diff), new_text, config


def preview(changes: Sequence[Change]) -> list[Outcome]:
    """What :func:`apply` would do, touching nothing.

    Raises:
        UnreadableConfigError: a file cannot be read or parsed.
        ForeignEntryError: a file has an entry with our name that is not ours.
    """
    return [_compute(change)[0] for change in changes]


def apply(changes: Sequence[Change]) -> list[Outcome]:
    """Apply every change: all are checked first, then each changed file is backed up and
    replaced atomically.

    Raises:
        UnreadableConfigError, ForeignEntryError: found before anything was written.
        ConfigChangedError: a client kept rewriting a file while we tried to edit it.
        OSError: a file cannot be written (the files before it were already replaced).
    """
    preview(changes)
    done = []
    for change in changes:
        for attempt in range(_ATTEMPTS):
            outcome, new_text, config = _compute(change)
            if outcome.action == "unchanged":
                done.append(outcome)
                break
            saved = backup(config)
            try:
                replace_config(config, new_text, new_mode=change.new_mode)
            except ConfigChangedError:
                if saved is not None:
                    saved.unlink(missing_ok=True)
                if attempt == _ATTEMPTS - 1:
                    raise
                continue
            done.append(Outcome(outcome.path, outcome.label, outcome.action, outcome.diff, saved))
            break
    return done
