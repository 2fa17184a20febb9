"""urchin: an append-only activity journal for people who work with AI coding agents.

Layout (grouped by capability; the top level holds the contracts and the write path):

- ``event`` (the journal line format), ``journal`` (the append-only file);
- ``recorder`` (the one write path), with its gates ``ignore`` and ``ephemeral``;
- ``config``, ``paths``, ``identity``, ``errors`` (the whole error tree), ``fsutil``
  (atomic whole-file writes), ``daemon`` (``urchin serve``);
- ``redact/`` secret detection; ``query/`` reading answers (index and linear scan);
  ``recall/`` semantic ranking and reflection; ``intake/`` the HTTP intake; ``mcp/``
  the MCP server (the only importer of the SDK); ``projection/`` daily notes;
  ``collectors/`` the sources; ``cli/`` the ``urchin`` command line.
"""

from urchin.event import Actor, Event, EventKind, OtherKind
from urchin.journal import Journal, JournalScan

__all__ = ["Actor", "Event", "EventKind", "Journal", "JournalScan", "OtherKind"]
__version__ = "0.1.0"
