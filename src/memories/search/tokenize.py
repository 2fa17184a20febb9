"""Tokens for the in-memory full-text index: one function for documents and queries alike.

Text is folded first (NFKC, so full-width and compatibility forms meet their plain forms, then
case-folded). It is then split into runs: runs of CJK ideographs and kana go through jieba's
``cut_for_search`` (which emits a long word and the shorter words inside it, so a two-character
query still finds a longer compound); every other script takes a regular-expression fast path,
because jieba costs about a microsecond per byte on text it cannot segment anyway. Hangul is
spaced like Latin text and takes the fast path too.

jieba's dictionary takes about half a second to load, so it loads on the first CJK text, never
at import or start-up. Query and document tokenization are the same function, so they agree.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["fold", "has_cjk", "tokenize", "unique"]

log = logging.getLogger(__name__)

# CJK Unified Ideographs (with extensions A-G), compatibility ideographs, kana, CJK symbols'
# ideographic number zero. Hangul is not here: Korean is written with spaces.
_CJK_CHARS = (
    "\u3005\u3007\u3041-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_CJK = re.compile(f"[{_CJK_CHARS}]")
# One pattern does the split: a CJK run, or a word of letters and digits of any other script
# (underscores split words, as the unicode61 tokenizer does, so ``snake_case`` finds ``case``).
_RUNS = re.compile(f"(?P<cjk>[{_CJK_CHARS}]+)|(?P<word>(?:(?![{_CJK_CHARS}])[^\\W_])+)")
_MAX_TOKEN_CHARS = 64

_jieba_guard = threading.Lock()
_jieba_cut: Callable[[str], Iterable[str]] | None = None


def _cut() -> Callable[[str], Iterable[str]]:
    """jieba's ``cut_for_search``, loaded (with its dictionary) on first use."""
    global _jieba_cut
    cut = _jieba_cut
    if cut is not None:
        return cut
    with _jieba_guard:
        if _jieba_cut is None:
            import jieba  # type: ignore[import-untyped]

            # jieba logs its dictionary loading at DEBUG/INFO on its own logger; keep it quiet.
            logging.getLogger("jieba").setLevel(logging.WARNING)
            jieba.setLogLevel(logging.WARNING)
            tokenizer: Any = jieba.Tokenizer()
            tokenizer.initialize()
            _jieba_cut = tokenizer.cut_for_search
        return _jieba_cut


def fold(text: str) -> str:
    """``text`` in the form every comparison uses: NFKC, then case-folded."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds any CJK ideograph or kana."""
    return _CJK.search(text) is not None


def tokenize(text: str) -> list[str]:
    """The index tokens of ``text``, in order (duplicates kept: BM25 counts them).

    Never raises for any ``str``; tokens longer than 64 characters are cut to 64 so a hash or a
    base64 blob makes one bounded token.
    """
    folded = fold(text)
    out: list[str] = []
    for match in _RUNS.finditer(folded):
        word = match.group("word")
        if word is not None:
            out.append(word[:_MAX_TOKEN_CHARS])
            continue
        run = match.group("cjk")
        if len(run) == 1:
            out.append(run)
            continue
        for token in _cut()(run):
            token = token.strip()
            if token:
                out.append(token[:_MAX_TOKEN_CHARS])
    return out


def unique(tokens: Iterable[str]) -> list[str]:
    """``tokens`` without repeats, first occurrence order kept."""
    return list(dict.fromkeys(tokens))
