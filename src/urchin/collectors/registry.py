"""The built-in collectors, in the order a collection tick runs them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from urchin.collectors.base import Collector
from urchin.collectors.claude import ClaudeCollector
from urchin.collectors.codex import CodexCollector
from urchin.collectors.copilot import CopilotCollector
from urchin.collectors.gemini import GeminiCollector
from urchin.collectors.git import GitCollector
from urchin.collectors.local_model import LocalModelCollector
from urchin.collectors.opencode import OpenCodeCollector
from urchin.collectors.shell import shell_collectors
from urchin.config import Settings
from urchin.errors import UsageError

__all__ = ["COLLECTOR_NAMES", "build_collectors"]

COLLECTOR_NAMES = (
    "shell",
    "zsh",
    "fish",
    "git",
    "claude",
    "copilot",
    "gemini",
    "codex",
    "opencode",
    "local-model",
)


def build_collectors(
    settings: Settings,
    names: Sequence[str] = (),
    *,
    repos: Sequence[Path] = (),
    disabled: Sequence[str] = (),
) -> list[Collector]:
    """Collectors to run: ``names`` (all when empty) minus ``disabled``.

    Raises:
        UsageError: a name is not a known collector.
    """
    unknown = [name for name in (*names, *disabled) if name not in COLLECTOR_NAMES]
    if unknown:
        known = ", ".join(COLLECTOR_NAMES)
        raise UsageError(f"unknown collector {unknown[0]!r}; known collectors: {known}")
    every: list[Collector] = [
        *shell_collectors(),
        GitCollector.from_settings(settings, repos=tuple(repos)),
        ClaudeCollector(),
        CopilotCollector(),
        GeminiCollector(),
        CodexCollector(),
        OpenCodeCollector(),
        LocalModelCollector(),
    ]
    wanted = set(names) if names else set(COLLECTOR_NAMES)
    # An explicitly named collector runs even when the configuration disables it.
    skip = set(disabled) - set(names)
    return [c for c in every if c.name in wanted and c.name not in skip]
