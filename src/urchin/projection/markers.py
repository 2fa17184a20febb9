"""The marker lines that delimit urchin's block, and splicing a block into a note's bytes.

A marker counts only when it stands alone on its line; every byte outside the
block is kept exactly (line endings, a missing final newline, a byte-order mark).
Broken markers raise :class:`~urchin.errors.ProjectionError` and leave the note alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from urchin.errors import ProjectionError

__all__ = [
    "ACTIVITY_MARKERS",
    "CURRENT_MARKERS",
    "DAILY_MARKERS",
    "MARKER_STYLES",
    "MarkerStyle",
    "Splice",
    "splice_note",
]


@dataclass(frozen=True, slots=True)
class MarkerStyle:
    """A pair of marker lines that delimit urchin's block in a note."""

    name: str
    start: str
    end: str


CURRENT_MARKERS = MarkerStyle("current", "<!-- URCHIN:start -->", "<!-- URCHIN:end -->")
ACTIVITY_MARKERS = MarkerStyle(
    "activity", "<!-- URCHIN:START:activity -->", "<!-- URCHIN:END:activity -->"
)
DAILY_MARKERS = MarkerStyle("daily", "<!-- URCHIN:DAILY -->", "<!-- /URCHIN:DAILY -->")
#: Recognised styles, preferred first.
MARKER_STYLES = (CURRENT_MARKERS, ACTIVITY_MARKERS, DAILY_MARKERS)

_MARKER_LINE = re.compile(rb"<!--[ \t]*(/?URCHIN:[A-Za-z0-9_:]+)[ \t]*-->", re.IGNORECASE)


def _marker_tokens() -> dict[bytes, tuple[MarkerStyle, bool]]:
    """Lower-cased marker names mapped to (style, is the start marker)."""
    tokens: dict[bytes, tuple[MarkerStyle, bool]] = {}
    for style in MARKER_STYLES:
        for marker, is_start in ((style.start, True), (style.end, False)):
            match = _MARKER_LINE.fullmatch(marker.encode("ascii"))
            assert match is not None
            tokens[match.group(1).lower()] = (style, is_start)
    return tokens


_TOKENS = _marker_tokens()
_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True, slots=True)
class Splice:
    """The note's new bytes and how they were made."""

    data: bytes
    style: MarkerStyle
    created: bool
    appended: bool


@dataclass(frozen=True, slots=True)
class _MarkerLine:
    number: int  # 1-based
    start: int  # offset of the line
    end: int  # offset just after its line ending
    newline: bytes


def _marker_lines(data: bytes) -> dict[tuple[MarkerStyle, bool], list[_MarkerLine]]:
    found: dict[tuple[MarkerStyle, bool], list[_MarkerLine]] = {}
    offset = 0
    number = 0
    while offset < len(data):
        number += 1
        newline_at = data.find(b"\n", offset)
        end = len(data) if newline_at < 0 else newline_at + 1
        line = data[offset:end]
        newline = b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""
        text = line[: len(line) - len(newline)]
        if offset == 0 and text.startswith(_BOM):
            text = text[len(_BOM) :]
        text = text.strip(b" \t\r")
        if text.startswith(b"<!--"):
            match = _MARKER_LINE.fullmatch(text)
            known = _TOKENS.get(match.group(1).lower()) if match else None
            if known is not None:
                found.setdefault(known, []).append(_MarkerLine(number, offset, end, newline))
        offset = end
    return found


def _lines_text(markers: Sequence[_MarkerLine]) -> str:
    numbers = [str(marker.number) for marker in markers]
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(numbers)


def _find_block(data: bytes, label: str) -> tuple[MarkerStyle, _MarkerLine, _MarkerLine] | None:
    found = _marker_lines(data)
    advice = "fix the markers by hand; the note was left unchanged"
    pairs: list[tuple[MarkerStyle, _MarkerLine, _MarkerLine]] = []
    for style in MARKER_STYLES:
        starts = found.get((style, True), [])
        ends = found.get((style, False), [])
        if not starts and not ends:
            continue
        for marker, lines in ((style.start, starts), (style.end, ends)):
            if len(lines) > 1:
                raise ProjectionError(
                    f"{label} has {marker} {len(lines)} times ({_lines_text(lines)}); "
                    f"keep exactly one; {advice}"
                )
        if not ends:
            raise ProjectionError(
                f"{label} has {style.start} ({_lines_text(starts)}) but no {style.end} "
                f"after it; {advice}"
            )
        if not starts:
            raise ProjectionError(
                f"{label} has {style.end} ({_lines_text(ends)}) but no {style.start} "
                f"before it; {advice}"
            )
        start, end = starts[0], ends[0]
        if end.start < start.start:
            raise ProjectionError(
                f"{label} has {style.end} (line {end.number}) before {style.start} "
                f"(line {start.number}); {advice}"
            )
        pairs.append((style, start, end))
    for (style_a, start_a, end_a), (style_b, start_b, end_b) in combinations(pairs, 2):
        if start_a.start < end_b.end and start_b.start < end_a.end:
            raise ProjectionError(
                f"{label} has overlapping {style_a.start} (line {start_a.number}) and "
                f"{style_b.start} (line {start_b.number}) blocks; keep one; {advice}"
            )
    return pairs[0] if pairs else None


def splice_note(note: bytes | None, body: Sequence[str], label: str = "the note") -> Splice:
    """The note with ``body`` between its markers, or appended in a new block.

    ``note`` is the note's bytes, or ``None`` when it does not exist yet.

    Raises:
        ProjectionError: the markers are duplicated, unpaired, out of order or
            overlapping, or the note is UTF-16 (urchin writes UTF-8).
    """
    encoded = [line.encode("utf-8") for line in body]
    if note is None:
        data = _block_bytes(CURRENT_MARKERS, encoded, b"\n")
        return Splice(data, CURRENT_MARKERS, created=True, appended=False)
    if note.startswith(_UTF16_BOMS):
        raise ProjectionError(f"{label} is UTF-16 text; urchin writes UTF-8 notes only")
    block = _find_block(note, label)
    if block is not None:
        style, start, end = block
        # The start marker's own line ending, so a CRLF note stays CRLF.
        newline = start.newline
        inner = b"".join(line + newline for line in encoded)
        return Splice(note[: start.end] + inner + note[end.start :], style, False, False)
    newline = _newline_of(note)
    if note in (b"", _BOM) or note.endswith((b"\n\n", b"\n\r\n")):
        separator = b""
    elif note.endswith(b"\n"):
        separator = newline
    else:
        separator = newline + newline
    data = note + separator + _block_bytes(CURRENT_MARKERS, encoded, newline)
    return Splice(data, CURRENT_MARKERS, created=False, appended=True)


def _block_bytes(style: MarkerStyle, body: Sequence[bytes], newline: bytes) -> bytes:
    lines = [style.start.encode("ascii"), *body, style.end.encode("ascii")]
    return b"".join(line + newline for line in lines)


def _newline_of(data: bytes) -> bytes:
    first = data.find(b"\n")
    return b"\r\n" if first > 0 and data[first - 1 : first] == b"\r" else b"\n"
