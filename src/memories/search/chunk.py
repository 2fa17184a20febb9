"""Overlapping, Unicode-safe chunks of a memory's body.

A body longer than ``size`` characters is cut into pieces of at most ``size`` characters that
overlap by about ``overlap`` characters, so a passage that straddles a cut is still found whole in
one chunk. Each cut is made at the best boundary in the last part of the window: a paragraph
break, else a sentence end (Latin or CJK punctuation), else a space, else any position that does
not split a grapheme cluster (combining marks, joiners, variation selectors, emoji modifiers,
regional-indicator pairs, Hangul syllable sequences and CR LF stay together).

A chunk's id is the hash of its text (``sha256:<hex>``), not the asset's id: identical text in two
assets is one chunk text, and a chunk id reveals nothing about which asset holds it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from memories.errors import UsageError

__all__ = ["DEFAULT_OVERLAP", "DEFAULT_SIZE", "Chunk", "chunk_text", "grapheme_boundary"]

DEFAULT_SIZE = 1200
DEFAULT_OVERLAP = 150

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SENTENCE = re.compile(r"[.!?;:][\"')\]]*\s|[。！？；…]|\n")
_SPACE = re.compile(r"\s")

_ZWJ = 0x200D


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a body: its text, where it starts and ends in the body, and its hash."""

    text: str
    start: int
    end: int

    @property
    def id(self) -> str:
        return "sha256:" + hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _extends(code: int) -> bool:
    """Whether a character with this code point attaches to the one before it."""
    if code in (_ZWJ, 0x20E3) or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F:  # skin tones, emoji tags
        return True
    return unicodedata.category(chr(code)) in ("Mn", "Me", "Mc")


def _hangul_type(code: int) -> str:
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97F:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


def _regional(code: int) -> bool:
    return 0x1F1E6 <= code <= 0x1F1FF


def grapheme_boundary(text: str, at: int) -> bool:
    """Whether cutting ``text`` before index ``at`` keeps every grapheme cluster whole.

    The rules are the parts of UAX #29 that matter for cutting prose: never inside CR LF, before
    an extending character, after a zero-width joiner, inside a Hangul syllable sequence, or
    between the two regional indicators of a flag.
    """
    if at <= 0 or at >= len(text):
        return True
    before, after = ord(text[at - 1]), ord(text[at])
    if before == 0x0D and after == 0x0A:
        return False
    if _extends(after) or before == _ZWJ:
        return False
    left, right = _hangul_type(before), _hangul_type(after)
    if left and right:
        if left == "L" and right in ("L", "V", "LV", "LVT"):
            return False
        if left in ("LV", "V") and right in ("V", "T"):
            return False
        if left in ("LVT", "T") and right == "T":
            return False
    if _regional(before) and _regional(after):
        # Indicators pair from the start of their run: cut only after an even count.
        run = 0
        i = at - 1
        while i >= 0 and _regional(ord(text[i])):
            run += 1
            i -= 1
        return run % 2 == 0
    return True


def _safe(text: str, at: int, floor: int) -> int:
    """The nearest grapheme boundary at or before ``at`` (but after ``floor``), else after."""
    i = at
    while i > floor and not grapheme_boundary(text, i):
        i -= 1
    if i > floor:
        return i
    i = at
    while i < len(text) and not grapheme_boundary(text, i):
        i += 1
    return i


def _last_match(pattern: re.Pattern[str], text: str, lo: int, hi: int) -> int | None:
    """The end of the last match of ``pattern`` within ``text[lo:hi]``."""
    found = None
    for match in pattern.finditer(text, lo, hi):
        found = match.end()
    return found


def _cut(text: str, start: int, size: int) -> int:
    """Where the chunk that begins at ``start`` ends."""
    hi = start + size
    if hi >= len(text):
        return len(text)
    # Look for a boundary in the second half of the window, so chunks stay near ``size``.
    lo = start + size // 2
    for pattern in (_PARAGRAPH, _SENTENCE, _SPACE):
        end = _last_match(pattern, text, lo, hi)
        if end is not None and end > start:
            return _safe(text, end, start)
    return _safe(text, hi, start)


def _start_after(text: str, previous_start: int, end: int, overlap: int) -> int:
    """Where the next chunk starts: about ``overlap`` before ``end``, at a word boundary."""
    if overlap <= 0:
        return end
    at = max(end - overlap, previous_start + 1)
    found = None
    for pattern in (_SENTENCE, _SPACE):
        match = pattern.search(text, at, end)
        if match is not None:
            found = match.end()
            break
    start = at if found is None or found >= end else found
    return _safe(text, start, previous_start)


def chunk_text(
    text: str, *, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP
) -> list[Chunk]:
    """``text`` cut into overlapping chunks of at most ``size`` characters (a single grapheme
    cluster longer than ``size`` is kept whole). Empty text has no chunks.

    Raises:
        UsageError: ``size`` is below 16 or ``overlap`` is negative or not below ``size / 2``.
    """
    if size < 16 or overlap < 0 or overlap >= size // 2:
        raise UsageError("chunk size must be at least 16 and overlap below half of it")
    if not text or text.isspace():
        return []
    if len(text) <= size:  # most memories: one chunk, the whole body
        return [Chunk(text, 0, len(text))]
    chunks: list[Chunk] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, size)
        if end <= start:  # one cluster longer than the window: keep it whole
            end = _safe(text, start + 1, start)
        piece = text[start:end]
        if piece.strip():
            chunks.append(Chunk(piece, start, end))
        if end >= len(text):
            break
        start = _start_after(text, start, end, overlap)
    return chunks
