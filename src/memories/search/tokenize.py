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
finds the identifier. :func:`cjk_grams` gives the overlapping character pairs of CJK runs, which
the index keeps in a column of their own: they match where jieba segments the query and the
text differently.

jieba is ``rjieba``, the binding of jieba-rs: jieba's algorithm and dictionary, cutting exactly
as the Python package does (a test compares them) about twenty times faster and in less than half
its memory. Its dictionary takes about a tenth of a second and 34 MiB to build, so it loads on
the first CJK text, never at import or start-up.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from typing import Protocol, cast

__all__ = [
    "cjk_grams",
    "fold",
    "folded_contains",
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
_MAX_TOKEN_CHARS = 64
# The parts of a camel-case word: an upper-case run before a capitalized part (the "IP" of
# "IPv4"), a capitalized or lower-case part, or digits.
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# A camel-case step: a lower-case letter and a capital ("tB"), or two capitals and a lower-case
# letter ("IPv"). The pattern starts at the capital, so the engine skips from capital to
# capital, which are rare, instead of trying both kinds at every character (four times faster
# on prose); its empty group marks the second kind.
_CAMEL = re.compile(r"[A-Z](?:(?<=[a-z][A-Z])|(?=[A-Z][a-z])())")
_CAMEL_SECOND = re.compile(r"[A-Z]{2}[a-z]")
# The ASCII fast path: the words of lower-cased text, each cut to its first 64 characters by
# the group, and the two ends of a word around a camel-case step.
_ASCII_WORD = re.compile(f"([a-z0-9]{{1,{_MAX_TOKEN_CHARS}}})[a-z0-9]*")
_WORD_TAIL = re.compile(r"[A-Za-z0-9]*")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

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
    out.append(folded[:_MAX_TOKEN_CHARS])
    if _CAMEL.search(word) is not None and len(word) <= _MAX_TOKEN_CHARS:
        parts = _CAMEL_PARTS.findall(word)
        if len(parts) > 1:
            out.extend(part.lower() for part in parts if len(part) > 1)


def _camel_step(text: str, at: int = 0) -> tuple[int, int] | None:
    """Where the first camel-case step that starts at or after ``at`` starts and ends."""
    found = _CAMEL.search(text, at)
    while found is not None:
        capital = found.start()
        if found.group(1) is not None:
            return capital, capital + 3
        if capital > at:
            return capital - 1, capital + 1
        # Its lower-case letter is before ``at``; the capital may still start the second kind.
        if _CAMEL_SECOND.match(text, capital) is not None:
            return capital, capital + 3
        found = _CAMEL.search(text, capital + 1)
    return None


def _ascii_tokens(text: str) -> list[str]:
    """:func:`_tokens` for ASCII text, token for token, in a few passes of compiled code
    instead of a Python step per word (ASCII text has no CJK run, and NFKC leaves it as is).
    Each camel-case word gets its parts written after it, then every word is cut out at once.
    """
    step = _camel_step(text)
    if step is None:
        return _ASCII_WORD.findall(text.lower())
    pieces: list[str] = []
    done = 0
    while step is not None:
        # The word around the step; one longer than 64 characters gives no parts.
        floor = max(done, step[0] - _MAX_TOKEN_CHARS)
        start = step[0]
        while start > floor and text[start - 1] in _ALNUM:  # back to the word's start
            start -= 1
        tail = _WORD_TAIL.match(text, step[1])
        end = tail.end() if tail is not None else step[1]
        word = text[start:end]
        pieces.append(text[done:end])
        if (start > floor or floor == 0 or not text[floor - 1].isalnum()) and len(word) <= (
            _MAX_TOKEN_CHARS
        ):
            parts = _CAMEL_PARTS.findall(word)
            if len(parts) > 1:
                pieces.extend(" " + part for part in parts if len(part) > 1)
        done = end
        step = _camel_step(text, end)
    pieces.append(text[done:])
    return _ASCII_WORD.findall("".join(pieces).lower())


def _tokens(text: str, search: bool) -> list[str]:
    if text.isascii():
        return _ascii_tokens(text)
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
        out.extend([token[:_MAX_TOKEN_CHARS] for token in cut])
    return out


def tokenize(text: str) -> list[str]:
    """The index tokens of ``text``, in order (duplicates kept: BM25 counts them).

    Never raises for any ``str``; tokens longer than 64 characters are cut to 64 so a hash or a
    base64 blob makes one bounded token.
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
