"""The closed set of asset kinds every layer names: memory, card, file, credential."""

from __future__ import annotations

from typing import Literal, TypeAlias

from memories.errors import UsageError

__all__ = ["KINDS", "Kind", "parse_kind"]

Kind: TypeAlias = Literal["memory", "card", "file", "credential"]
KINDS: tuple[Kind, ...] = ("memory", "card", "file", "credential")


def parse_kind(value: object) -> Kind:
    """Return ``value`` as a :data:`Kind`.

    Raises:
        UsageError: ``value`` is not one of memory, card, file, credential.
    """
    for kind in KINDS:
        if value == kind:
            return kind
    raise UsageError(f"unknown asset kind; use one of: {', '.join(KINDS)}")
