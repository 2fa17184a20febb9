"""Secret placeholders: ``{{secret:LABEL}}`` markers in a body, mapped to credentials.

A memory or card may carry a ``secrets`` map from a stable label to a credential asset id.
:func:`replace_exact` swaps every exact occurrence of a secret in a body for the label's
marker; :func:`resolve_markers` does the opposite for a caller allowed to receive the values
(``memories run`` arguments). Signed historical revisions are never rewritten: the secret
stays inside the ciphertext of the revisions written before it was protected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

from memories.errors import NotFoundError, UsageError

__all__ = ["MARKER", "marker", "markers_in", "replace_exact", "resolve_markers"]

#: A marker as it appears in a body: ``{{secret:LABEL}}``.
MARKER: Final = re.compile(r"\{\{secret:([A-Za-z0-9][A-Za-z0-9_.\-]{0,63})\}\}")
_MIN_SECRET_CHARS = 4  # a shorter "secret" would match ordinary words


def marker(label: str) -> str:
    """The marker text for ``label``."""
    return "{{secret:" + label + "}}"


def markers_in(text: str) -> list[str]:
    """The labels of the markers in ``text``, in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in MARKER.finditer(text)))


def replace_exact(body: str, secret: str, label: str) -> tuple[str, int]:
    """``body`` with every exact occurrence of ``secret`` replaced by the label's marker, and
    how many there were.

    Raises:
        UsageError: the secret is shorter than 4 characters or does not occur in the body (the
            message never quotes either).
    """
    if len(secret) < _MIN_SECRET_CHARS:
        raise UsageError(f"a secret to protect is at least {_MIN_SECRET_CHARS} characters")
    count = body.count(secret)
    if count == 0:
        raise UsageError("that text does not occur in the body exactly as given")
    return body.replace(secret, marker(label)), count


def resolve_markers(
    text: str, secrets: Mapping[str, str], value_of: Callable[[str], str]
) -> tuple[str, list[str]]:
    """``text`` with each marker replaced by its credential's value, and the labels used.

    ``value_of`` maps a label to the plaintext (the caller has authorized and audited it).

    Raises:
        NotFoundError: a marker names a label the map does not have.
    """
    used: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        label = match.group(1)
        if label not in secrets:
            raise NotFoundError("a secret placeholder names a label that is not mapped")
        if label not in used:
            used.append(label)
        return value_of(label)

    return MARKER.sub(substitute, text), used
