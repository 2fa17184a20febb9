"""Where each client discovers skills, per scope (as their documentation says today).

========== ==================================== ===========================
client     user scope                           project scope (in DIR)
========== ==================================== ===========================
claude-code ``~/.claude/skills/``               ``DIR/.claude/skills/``
codex      ``~/.agents/skills/``                ``DIR/.agents/skills/``
opencode   ``$XDG_CONFIG_HOME/opencode/skills/`` ``DIR/.opencode/skills/``
========== ==================================== ===========================

Codex releases before the shared ``.agents`` folder read ``$CODEX_HOME/skills`` (``~/.codex``).
Current releases read both and do not merge skills of the same name, so writing both would
show the skill twice: the legacy folder is written only when asked (``legacy_codex``), instead
of ``~/.agents/skills``. OpenCode also reads ``~/.claude/skills`` and ``~/.agents/skills``; its
own folder is the one installed for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from memories.errors import UsageError
from memories.skills.bundle import SKILL_FILE, SKILL_NAME

__all__ = ["CLIENTS", "SCOPES", "Client", "Scope", "Target", "target_for"]

Client: TypeAlias = Literal["claude-code", "codex", "opencode"]
Scope: TypeAlias = Literal["user", "project"]
CLIENTS: tuple[Client, ...] = ("claude-code", "codex", "opencode")
SCOPES: tuple[Scope, ...] = ("user", "project")

_PROJECT_ROOTS: dict[Client, tuple[str, ...]] = {
    "claude-code": (".claude", "skills"),
    "codex": (".agents", "skills"),
    "opencode": (".opencode", "skills"),
}


@dataclass(frozen=True, slots=True)
class Target:
    """One skill file to install: ``root / SKILL_NAME / SKILL_FILE``.

    ``root`` is the client's skills folder; it (and what lies above it) may be a link, as
    people keep these folders in their dotfiles. Everything below it must not be.
    """

    client: Client
    scope: Scope
    root: Path

    @property
    def folder(self) -> Path:
        return self.root / SKILL_NAME

    @property
    def file(self) -> Path:
        return self.folder / SKILL_FILE


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or os.path.expanduser("~")
    if not home or not os.path.isabs(home):
        raise UsageError("HOME is not set to an absolute path; cannot find the user's skills")
    return Path(home)


def _xdg_config(env: Mapping[str, str]) -> Path:
    value = env.get("XDG_CONFIG_HOME", "")
    # The XDG rules: a relative value is invalid and ignored.
    return Path(value) if value and os.path.isabs(value) else _home(env) / ".config"


def target_for(
    client: str,
    scope: str,
    *,
    project_dir: Path | None = None,
    legacy_codex: bool = False,
    env: Mapping[str, str] | None = None,
) -> Target:
    """The target for ``client`` in ``scope``.

    ``project_dir`` is the project's folder for the project scope (default: the current
    folder). ``legacy_codex`` installs Codex's user skill in ``$CODEX_HOME/skills`` (default
    ``~/.codex/skills``) for releases that predate ``~/.agents/skills``.

    Raises:
        UsageError: an unknown client or scope, ``legacy_codex`` for anything but Codex in the
            user scope, or no usable HOME.
    """
    env = os.environ if env is None else env
    if client not in CLIENTS:
        raise UsageError(f"unknown client; choose one of {', '.join(CLIENTS)}")
    if scope not in SCOPES:
        raise UsageError("unknown scope; choose user or project")
    known: Client = client
    if legacy_codex and (known != "codex" or scope != "user"):
        raise UsageError("--legacy-codex applies to the codex client in the user scope only")
    if scope == "project":
        base = Path(project_dir) if project_dir is not None else Path.cwd()
        return Target(known, "project", base.absolute().joinpath(*_PROJECT_ROOTS[known]))
    home = _home(env)
    if known == "claude-code":
        root = home / ".claude" / "skills"
    elif known == "opencode":
        root = _xdg_config(env) / "opencode" / "skills"
    elif legacy_codex:
        codex_home = env.get("CODEX_HOME", "")
        base = Path(codex_home) if codex_home and os.path.isabs(codex_home) else home / ".codex"
        root = base / "skills"
    else:
        root = home / ".agents" / "skills"
    return Target(known, "user", root)
