"""Errors of client setup. They keep their parent's wire code (see :mod:`memories.errors`)."""

from __future__ import annotations

from memories.errors import ConflictError, MemoriesError, UsageError

__all__ = ["ConfigChangedError", "ForeignEntryError", "UnknownScopeError", "UnreadableConfigError"]


class UnreadableConfigError(MemoriesError):
    """A client config we cannot parse or must not touch; nothing was changed."""


class ConfigChangedError(ConflictError):
    """The client rewrote its config while we were editing it; nothing was written."""


class ForeignEntryError(ConflictError):
    """The config already has an entry with our name that is not ours."""


class UnknownScopeError(UsageError):
    """The client has no config at that scope."""
