"""Daily-note projection: a summary of a day's events inside a marker block of a Markdown note.

The note is ``<vault_root>/daily/YYYY-MM-DD.md`` (the local date). urchin owns
only the lines between a start and an end marker; every byte outside them is
kept exactly (line endings, a missing final newline, a byte-order mark).

Markers. A marker counts only when it stands alone on its line (spaces, tabs, a
CR and, on the first line, a UTF-8 BOM around it are allowed; the name is
matched case-insensitively). Three styles are recognised, in this order of
preference::

    <!-- URCHIN:start -->            / <!-- URCHIN:end -->             current
    <!-- URCHIN:START:activity -->   / <!-- URCHIN:END:activity -->    earlier versions (C)
    <!-- URCHIN:DAILY -->            / <!-- /URCHIN:DAILY -->          earlier versions (A)

A note that already holds a pair of an earlier style keeps those markers and
gets its text between them replaced, so notes (and templates) written for
earlier versions keep working and never end up with two blocks. A note with no
marker at all gets a current-style block appended after a blank line; a missing
note (and ``daily/`` folder) is created. The vault root itself must exist: a
missing one more likely means a wrong ``vault_root`` than a wish for a new vault.
Every style that appears must be a single start line followed by a single end
line, and pairs of different styles must not overlap; otherwise the projection
stops with :class:`~urchin.errors.ProjectionError` and the note is left untouched.

The block holds no "generated at" time, so projecting the same events twice
gives the same bytes. At most :data:`MAX_BULLETS` events get a bullet.

Layout:

- :mod:`~urchin.projection.window`: which events: a local day or the last hours.
- :mod:`~urchin.projection.block`: the block's text, neutralised event by event.
- :mod:`~urchin.projection.markers`: marker styles; splicing a block into a note.
- :mod:`~urchin.projection.note`: reading the note and replacing it atomically.
"""

from __future__ import annotations

from urchin.errors import ProjectionError
from urchin.projection.block import MAX_BULLETS, block_text, render_block
from urchin.projection.markers import (
    ACTIVITY_MARKERS,
    CURRENT_MARKERS,
    DAILY_MARKERS,
    MARKER_STYLES,
    MarkerStyle,
    Splice,
    splice_note,
)
from urchin.projection.note import ProjectionResult, note_path, project_daily_note
from urchin.projection.window import EventSelection, Window, select_events

__all__ = [
    "ACTIVITY_MARKERS",
    "CURRENT_MARKERS",
    "DAILY_MARKERS",
    "MARKER_STYLES",
    "MAX_BULLETS",
    "EventSelection",
    "MarkerStyle",
    "ProjectionError",
    "ProjectionResult",
    "Splice",
    "Window",
    "block_text",
    "note_path",
    "project_daily_note",
    "render_block",
    "select_events",
    "splice_note",
]
