"""Capture-time secret redaction: known secret shapes become ``[REDACTED:<kind>]``.

A token pasted into a prompt, an ``.env`` file echoed by an agent or a password on a
command line never lands on disk. Kinds are short stable words (``private_key``,
``github_token``, ``password``, ``bearer``, ...) so readers can count them.

Layout:

- :mod:`~urchin.redact.names`: which names hold secrets; placeholders, code, entropy.
- :mod:`~urchin.redact.scan`: a text under redaction and where names are assigned.
- :mod:`~urchin.redact.literals`: which gate literals a text holds, a few searches for all.
- :mod:`~urchin.redact.rules`: the built-in rules, one module per class.
- :mod:`~urchin.redact.user`: user patterns and the allowlist.
- :mod:`~urchin.redact.redactor`: the :class:`Redactor` over texts and events.
"""

from __future__ import annotations

from urchin.redact.names import (
    ENTROPY_MIN_LENGTH,
    ENTROPY_THRESHOLD,
    MARKER_PREFIX,
    classify_value,
    marker,
)
from urchin.redact.redactor import (
    Redactor,
    count_markers,
    default_redactor,
    event_marker_counts,
    redact,
)
from urchin.redact.rules import BUILTIN, Guard, RegexRule, Rule
from urchin.redact.scan import Scan
from urchin.redact.user import compile_allowlist, compile_patterns

__all__ = [
    "BUILTIN",
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "MARKER_PREFIX",
    "Guard",
    "Redactor",
    "RegexRule",
    "Rule",
    "Scan",
    "classify_value",
    "compile_allowlist",
    "compile_patterns",
    "count_markers",
    "default_redactor",
    "event_marker_counts",
    "marker",
    "redact",
]
