"""User patterns and the allowlist, from ``redact_patterns`` and ``redact_allow``.

A user pattern is a regular expression; its ``secret`` group, else its group 1, else the
whole match is replaced by ``[REDACTED:custom]``. An allow entry is a literal, or a regular
expression when prefixed ``re:``; a candidate equal to a literal or fully matched by an
allow pattern is left alone, whichever rule found it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from urchin.errors import ConfigError
from urchin.redact.names import MARKER_PREFIX
from urchin.redact.rules.base import Decision, RegexRule

__all__ = ["compile_allowlist", "compile_patterns", "custom_rule"]


def compile_patterns(
    raw: Sequence[str], label: str = "redact_patterns"
) -> tuple[re.Pattern[str], ...]:
    """Compile extra secret patterns.

    Raises:
        ConfigError: a pattern is not a valid regular expression, or matches empty text;
            the message names its index (``redact_patterns[2]``) but never echoes it.
    """
    compiled: list[re.Pattern[str]] = []
    for index, pattern in enumerate(raw):
        regex = _compile_one(pattern, f"{label}[{index}]")
        if regex.fullmatch("") is not None:
            raise ConfigError(f"{label}[{index}] matches empty text; it would redact nothing")
        compiled.append(regex)
    return tuple(compiled)


def compile_allowlist(
    raw: Sequence[str], label: str = "redact_allow"
) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """Split allowlist entries into literals and ``re:``-prefixed regular expressions.

    Raises:
        ConfigError: a ``re:`` entry is not a valid regular expression (named by index).
    """
    literals: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for index, entry in enumerate(raw):
        if entry.startswith("re:"):
            patterns.append(_compile_one(entry[3:], f"{label}[{index}]"))
        elif entry:
            literals.add(entry)
    return frozenset(literals), tuple(patterns)


def _compile_one(pattern: str, label: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{label} must be a non-empty string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{label} is not a valid regular expression: {exc.msg}") from None


def custom_rule(pattern: re.Pattern[str]) -> RegexRule:
    """The rule a compiled user pattern makes (kind ``custom``)."""
    group: int | str = 0
    if "secret" in pattern.groupindex:
        group = "secret"
    elif pattern.groups:
        group = 1

    def decide(match: re.Match[str]) -> Decision | None:
        start, end = match.span(group)
        if start < 0 or _inside_marker(match.string, start, end):
            return None
        return "custom", start, end

    return RegexRule(pattern, decide)


def _inside_marker(text: str, start: int, end: int) -> bool:
    """Whether [start, end) touches a marker, so a user pattern never rewrites one."""
    if MARKER_PREFIX in text[start:end]:
        return True
    opened = text.rfind(MARKER_PREFIX, max(0, start - 52), start + len(MARKER_PREFIX))
    if opened < 0:
        return False
    closed = text.find("]", opened)
    return closed >= start
