"""Which memories belong in a workspace's context block, from what the daemon answered.

Two questions are asked (by the command, over the usual request path): the assets tagged
with the workspace's name, and a search for the name's words, which the index matches in
titles, bodies, tags and sources (a source naming a file in the folder holds the name). This
module merges the answers: tagged assets first (newest change first), then search hits in
rank order, each asset once. Private assets are dropped even if a listing carried one (an
elevated session may), and credentials and files never appear: only memories and cards are
context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MemoryItem", "select_memories"]

_KINDS = frozenset({"memory", "card"})


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One memory as the block shows it."""

    id: str
    short_id: str
    kind: str
    card_type: str | None
    title: str
    tags: tuple[str, ...]
    snippet: str | None


def _item(summary: Mapping[str, Any], snippet: str | None) -> MemoryItem | None:
    if summary.get("private") is not False or summary.get("kind") not in _KINDS:
        return None
    asset = summary.get("id")
    short = summary.get("short_id")
    if not isinstance(asset, str) or not isinstance(short, str):
        return None
    card_type = summary.get("card_type")
    tags = summary.get("tags") or []
    return MemoryItem(
        id=asset,
        short_id=short,
        kind=str(summary["kind"]),
        card_type=card_type if isinstance(card_type, str) else None,
        title=str(summary.get("title") or ""),
        tags=tuple(str(tag) for tag in tags if isinstance(tag, str)),
        snippet=snippet,
    )


def _hits(results: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], str | None]]:
    found: list[tuple[Mapping[str, Any], str | None]] = []
    for hit in results:
        summary = hit.get("summary")
        snippet = hit.get("snippet")
        text = snippet.get("text") if isinstance(snippet, Mapping) else None
        if isinstance(summary, Mapping):
            found.append((summary, text if isinstance(text, str) else None))
    return found


def select_memories(
    tagged: Sequence[Mapping[str, Any]],
    searches: Sequence[Sequence[Mapping[str, Any]]],
    *,
    limit: int,
) -> tuple[list[MemoryItem], int]:
    """Up to ``limit`` memories for the block, and how many distinct ones were found in all.

    ``tagged`` are summaries (``list`` answers); ``searches`` are the ``results`` of each
    search, best first.
    """
    ordered_tagged = sorted(
        tagged, key=lambda s: (str(s.get("updated_at", "")), str(s.get("id", ""))), reverse=True
    )
    candidates: list[tuple[Mapping[str, Any], str | None]] = [(s, None) for s in ordered_tagged]
    snippets: dict[str, str] = {}
    for results in searches:
        for summary, snippet in _hits(results):
            candidates.append((summary, snippet))
            asset = summary.get("id")
            if isinstance(asset, str) and snippet and asset not in snippets:
                snippets[asset] = snippet
    chosen: dict[str, MemoryItem] = {}
    for summary, _ in candidates:
        asset = summary.get("id")
        if not isinstance(asset, str) or asset in chosen:
            continue
        item = _item(summary, snippets.get(asset))
        if item is not None:
            chosen[asset] = item
    items = list(chosen.values())
    return items[:limit], len(items)
