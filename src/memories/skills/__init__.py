"""Agent skills: the ``SKILL.md`` this release ships and its installer (``memories inject``).

Layout:

- :mod:`~memories.skills.bundle`: the packaged ``data/memories/SKILL.md``, its front matter.
- :mod:`~memories.skills.targets`: where Claude Code, Codex and OpenCode discover skills.
- :mod:`~memories.skills.install`: preflight, stage and publish without clobbering.

A CLI-only operation: it runs before any data home exists and never opens the store or calls
the daemon (an import-linter contract keeps store, vault, service, ipc and daemon out).
"""

from __future__ import annotations

from memories.skills.bundle import (
    DESCRIPTION_MAX,
    NAME_MAX,
    SKILL_FILE,
    SKILL_NAME,
    Skill,
    bundled_skill,
    parse_front_matter,
)
from memories.skills.install import Outcome, Planned, install, plan
from memories.skills.targets import CLIENTS, SCOPES, Client, Scope, Target, target_for

__all__ = [
    "CLIENTS",
    "DESCRIPTION_MAX",
    "NAME_MAX",
    "SCOPES",
    "SKILL_FILE",
    "SKILL_NAME",
    "Client",
    "Outcome",
    "Planned",
    "Scope",
    "Skill",
    "Target",
    "bundled_skill",
    "install",
    "parse_front_matter",
    "plan",
    "target_for",
]
