"""Tokens for the in-memory full-text index, for documents and for queries.

Text is normalized first (NFKC, so full-width and compatibility forms meet their plain forms)
and split into runs: runs of CJK ideographs and kana go to jieba; every other script takes a
regular-expression fast path, which also keeps Latin words to this module's own rules. Hangul
is spaced like Latin text and takes the fast path too. Tokens are case-folded.

Two granularities, one vocabulary:

- :func:`tokenize` (documents) segments CJK runs with jieba's ``cut_for_search``: every word
  of ``cut`` plus the dictionary words inside it, so a short query word still finds a longer
  compound;
- :func:`query_tokens` (queries) uses jieba's ``cut``: the words alone. Each of them is also a
  document token of the same text, so query and document agree, while a query is not scored
  once for a compound and again for each of its parts (which ranks any document holding a
  common compound such as 数据中心 above the one holding the rarer words).

A word written in camel case (``ArgumentDefaultsHelpFormatter``, ``IPv4Network``) gives its
parts as well as the whole word, in documents and queries alike, so prose that names the parts
finds the identifier.

Text that is ASCII once its typographic punctuation is read as spaces takes a faster path, and
:func:`fts5_spelling` gives it as FTS5's own tokenizer splits into exactly these tokens: the
index hands such text to FTS5 as it is, and works its tokens out in Python only when a query
needs them. :func:`cjk_grams` gives the overlapping character pairs of CJK runs, which
the index keeps in a column of their own: they match where jieba segments the query and the
text differently.

jieba is ``rjieba``, the binding of jieba-rs: jieba's algorithm and dictionary, cutting exactly
as the Python package does (a test compares them) about twenty times faster and in less than half
its memory. Its dictionary takes about a tenth of a second and 34 MiB to build, so it loads on
the first CJK text, never at import or start-up.
"""

from __future__ import annotations

import re
import string
import threading
import unicodedata
from collections.abc import Iterable
from typing import Protocol, cast

__all__ = [
    "cjk_grams",
    "fold",
    "folded_contains",
    "fts5_spelling",
    "has_cjk",
    "query_tokens",
    "tokenize",
    "unique",
]

# CJK Unified Ideographs (with extensions A-G), compatibility ideographs, kana, CJK symbols'
# ideographic number zero. Hangul is not here: Korean is written with spaces.
_CJK_CHARS = (
    "\u3005\u3007\u3041-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
# One pattern does the split: a CJK run, or a word of letters and digits of any other script
# (underscores split words, as the unicode61 tokenizer does, so ``snake_case`` finds ``case``).
_RUNS = re.compile(f"(?P<cjk>[{_CJK_CHARS}]+)|(?P<word>(?:(?![{_CJK_CHARS}])[^\\W_])+)")
# A word longer than this gives no camel-case parts (a hash or a base64 blob is one token).
_MAX_CAMEL_CHARS = 64
# The parts of a camel-case word: an upper-case run before a capitalized part (the "IP" of
# "IPv4"), a capitalized or lower-case part, or digits.
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# A camel-case step: a lower-case letter and a capital ("tB"), or two capitals and a lower-case
# letter ("IPv"). The pattern starts at the capital, so the engine skips from capital to
# capital instead of trying both kinds at every character.
_CAMEL = re.compile(r"[A-Z](?:(?<=[a-z][A-Z])|(?=[A-Z][a-z]))")
# The ASCII fast path: the words of lower-cased text.
_ASCII_WORD = re.compile("[a-z0-9]+")


def _character_classes() -> bytes:
    """A table for ``bytes.translate`` that maps each ASCII byte to its class (see
    :func:`_with_parts`): ``A`` upper case, ``a`` lower case, ``0`` a digit, a space
    anything else."""
    table = bytearray(b" " * 256)
    for chars, kind in ((string.ascii_uppercase, "A"), (string.ascii_lowercase, "a")):
        for char in chars:
            table[ord(char)] = ord(kind)
    for char in string.digits:
        table[ord(char)] = ord("0")
    return bytes(table)


_CLASSES = _character_classes()


def _separator_class() -> str:
    """A regular-expression class of the characters up to U+3000 that belong to no token:
    punctuation, symbols and spaces whose NFKC forms hold no letter or digit (the dashes,
    quotes and box drawing of prose; not ``™``, which is ``TM``)."""
    ranges: list[list[int]] = []
    for code in range(0x80, 0x3001):
        char = chr(code)
        if unicodedata.category(char)[0] not in "PSZ":
            continue
        if _RUNS.search(unicodedata.normalize("NFKC", char)) is not None:
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(
        f"{re.escape(chr(a))}-{re.escape(chr(b))}" if a < b else re.escape(chr(a))
        for a, b in ranges
    )


#: Built at import (a few milliseconds): see :func:`_separator_class`.
_SEPARATORS = re.compile(f"[{_separator_class()}]")

_segmenter_guard = threading.Lock()
_segmenter: Segmenter | None = None


class Segmenter(Protocol):
    """What tokenizing needs of jieba: its two cuts of a run of CJK text."""

    def cut(self, text: str) -> Iterable[str]: ...

    def cut_for_search(self, text: str) -> Iterable[str]: ...


def _jieba() -> Segmenter:
    """jieba's segmenter, loaded (with its dictionary) on first use."""
    global _segmenter
    found = _segmenter
    if found is not None:
        return found
    with _segmenter_guard:
        if _segmenter is None:
            import rjieba  # builds its dictionary on import

            _segmenter = cast(Segmenter, rjieba)
        return _segmenter


# Text made only of these characters (ASCII, CJK ideographs, the common CJK and quotation
# punctuation, full-width ASCII and the ideographic space) is changed by NFKC in one way only:
# the full-width forms become ASCII and the ideographic space a space. None of them combines
# with a neighbour, so replacing those gives exactly what normalizing gives, four times
# faster on Chinese prose; any other character sends the text through ``unicodedata``.
_NFKC_SIMPLE = re.compile(
    "[\x00-\x7f\u00b7\u2014\u2018\u2019\u201c\u201d\u3000-\u3002\u3008-\u3011"
    "\u3014\u3015\u3400-\u4dbf\u4e00-\u9fff\uff01-\uff5e]*"
)
_FULL_WIDTH = re.compile("[\u3000\uff01-\uff5e]")
_HALF_WIDTH = {chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)} | {"\u3000": " "}


def _nfkc(text: str) -> str:
    if _NFKC_SIMPLE.fullmatch(text) is None:
        return unicodedata.normalize("NFKC", text)
    # A handful of distinct forms, each many times: replace each at once where it first shows.
    found = _FULL_WIDTH.search(text)
    while found is not None:
        at = found.start()
        text = text.replace(found.group(), _HALF_WIDTH[found.group()])
        found = _FULL_WIDTH.search(text, at)
    return text


def fold(text: str) -> str:
    """``text`` in the form every comparison uses: NFKC, then case-folded."""
    if text.isascii():
        return text.lower()
    return _nfkc(text).casefold()


_IDEOGRAPHS = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]+")


def folded_contains(text: str, needle: str) -> bool:
    """Whether ``fold(text)`` holds ``needle`` (itself folded), without folding all of a
    long text where that cannot change the answer: folding text of the characters
    :func:`_nfkc` takes its short way with maps each ideograph to itself and every other
    character to characters that are not ideographs, so a needle of ideographs alone is
    found in the folded text exactly where it is found in the text."""
    if text.isascii():
        return needle in text.lower()
    if _IDEOGRAPHS.fullmatch(needle) is not None and _NFKC_SIMPLE.fullmatch(text) is not None:
        return needle in text
    return needle in fold(text)


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds any CJK ideograph or kana."""
    return _CJK.search(text) is not None


def _normalized(text: str) -> str:
    return text if text.isascii() else _nfkc(text)


def _word(word: str, out: list[str]) -> None:
    folded = word.lower() if word.isascii() else word.casefold()
    out.append(folded)
    if _CAMEL.search(word) is not None and len(word) <= _MAX_CAMEL_CHARS:
        parts = _CAMEL_PARTS.findall(word)
        if len(parts) > 1:
            out.extend(part.lower() for part in parts if len(part) > 1)


def _parts_of(word: str) -> str:
    """The parts of the camel-case ``word`` longer than one character, each after a space
    ("" when there are none)."""
    parts = [part for part in _CAMEL_PARTS.findall(word) if len(part) > 1]
    return " " + " ".join(parts) if parts else ""


def _with_parts(text: str) -> str:
    """ASCII ``text`` with the parts of each camel-case word written after it, after a
    space: its words, split on anything but letters and digits, are then the tokens of
    ``text``.

    The text is first mapped to the class of each character (``a`` lower case, ``A`` upper
    case, ``0`` a digit, a space anything else), where a camel-case step is ``aA`` or
    ``AAa`` and a word ends at a space: finding them is then a substring search in compiled
    code, not a regular expression tried at each character, nor a Python step per word."""
    classes = text.encode("ascii").translate(_CLASSES)
    lower = classes.find(b"aA")
    upper = classes.find(b"AAa")
    if lower < 0 and upper < 0:
        return text
    pieces: list[str] = []
    done = 0
    while lower >= 0 or upper >= 0:
        step = lower if upper < 0 or 0 <= lower < upper else upper
        start = classes.rfind(b" ", 0, step) + 1
        end = classes.find(b" ", step)
        if end < 0:
            end = len(classes)
        pieces.append(text[done:end])
        if end - start <= _MAX_CAMEL_CHARS:
            pieces.append(_parts_of(text[start:end]))
        done = end
        if 0 <= lower < end:
            lower = classes.find(b"aA", end)
        if 0 <= upper < end:
            upper = classes.find(b"AAa", end)
    pieces.append(text[done:])
    return "".join(pieces)


def _ascii_tokens(text: str) -> list[str]:
    """:func:`_tokens` for ASCII text, token for token (ASCII text has no CJK run, and NFKC
    leaves it as is)."""
    return _ASCII_WORD.findall(_with_parts(text).lower())


def _ascii_form(text: str) -> str | None:
    """``text`` as ASCII text with the same tokens, where there is one: ``text`` itself, or
    with each non-ASCII character that belongs to no token (:data:`_SEPARATORS`: the
    typographic quotes and dashes of much English text) as a space; None when any other
    non-ASCII character is left."""
    if text.isascii():
        return text
    if _CJK.search(text) is not None:  # most CJK text: not worth replacing anything
        return None
    plain = _SEPARATORS.sub(" ", text)
    return plain if plain.isascii() else None


def fts5_spelling(text: str) -> str | None:
    """``text`` spelled so that FTS5's ``unicode61`` tokenizer splits it into exactly the
    tokens :func:`tokenize` gives (its own splitting on anything but ASCII letters and
    digits, and case folding, are this module's rules for ASCII text): the text with the
    parts of each camel-case word written after it, and its non-ASCII punctuation, symbols
    and spaces as spaces. None for text with any other non-ASCII character, where the two
    could differ (CJK runs need jieba, and FTS5 folds some letters as NFKC does not). Never
    raises for any ``str``."""
    plain = _ascii_form(text)
    return _with_parts(plain) if plain is not None else None


def _tokens(text: str, search: bool) -> list[str]:
    plain = _ascii_form(text)
    if plain is not None:
        return _ascii_tokens(plain)
    out: list[str] = []
    for match in _RUNS.finditer(_normalized(text)):
        word = match.group("word")
        if word is not None:
            _word(word, out)
            continue
        run = match.group("cjk").casefold()
        if len(run) == 1:
            out.append(run)
            continue
        segmenter = _jieba()
        cut = segmenter.cut_for_search(run) if search else segmenter.cut(run)
        out.extend(cut)
    return out


def tokenize(text: str) -> list[str]:
    """The index tokens of ``text``, in order (duplicates kept: BM25 counts them).

    Never raises for any ``str``. A hash or a base64 blob is one token, however long.
    """
    return _tokens(text, search=True)


def query_tokens(text: str) -> list[str]:
    """The tokens a query for ``text`` looks for: as :func:`tokenize`, but CJK runs give
    jieba's words without the shorter words inside them. Each is also in ``tokenize(text)``.
    Never raises for any ``str``."""
    return _tokens(text, search=False)


def cjk_grams(text: str) -> list[str]:
    """The overlapping pairs of characters of each CJK run of ``text`` (a run of one
    character gives that character), folded, in order. Never raises for any ``str``."""
    out: list[str] = []
    if text.isascii():
        return out
    for match in _CJK_RUN.finditer(_normalized(text)):
        run = match.group().casefold()
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(map(str.__add__, run, run[1:]))  # each character with the next
    return out


def unique(tokens: Iterable[str]) -> list[str]:
    """``tokens`` without repeats, first occurrence order kept."""
    return list(dict.fromkeys(tokens))
