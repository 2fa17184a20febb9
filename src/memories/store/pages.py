"""Entry pages: many small entries sealed together, so unlock cost follows bytes, not counts.

Sealing each entry in its own row makes unlock pay a decryption, a hash and a row fetch per
entry; at 100,000 entries that alone is over a second in Python. Entries are instead packed into
pages of about ``PAGE_TARGET`` bytes. A commit rewrites only the pages its changes touch, so its
cost stays bounded by the page size however large the store grows. New entries fill the one
*open* page until it is full; an entry that outgrows its page moves to the open page.

Page plaintext: repeated ``key length (u16) || key (UTF-8) || value length (u32) || value``.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from memories.errors import IntegrityError

__all__ = ["PAGE_TARGET", "PageIndex", "PagePlan", "decode_page", "encode_page"]

PAGE_TARGET = 16 * 1024
_KEY_LEN = struct.Struct(">H")
_VALUE_LEN = struct.Struct(">I")
_OVERHEAD = _KEY_LEN.size + _VALUE_LEN.size


def entry_size(key: str, value: bytes) -> int:
    return _OVERHEAD + len(key.encode("utf-8")) + len(value)


def encode_page(items: Iterable[tuple[str, bytes]]) -> bytes:
    parts: list[bytes] = []
    for key, value in items:
        name = key.encode("utf-8")
        parts += (_KEY_LEN.pack(len(name)), name, _VALUE_LEN.pack(len(value)), value)
    return b"".join(parts)


def decode_page(data: bytes) -> list[tuple[str, bytes]]:
    """Raises ``IntegrityError`` for a malformed page."""
    items: list[tuple[str, bytes]] = []
    at, end = 0, len(data)
    try:
        while at < end:
            (key_len,) = _KEY_LEN.unpack_from(data, at)
            at += _KEY_LEN.size
            key = data[at : at + key_len].decode("utf-8")
            at += key_len
            (value_len,) = _VALUE_LEN.unpack_from(data, at)
            at += _VALUE_LEN.size
            if at + value_len > end:
                raise ValueError("truncated value")
            items.append((key, data[at : at + value_len]))
            at += value_len
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise IntegrityError("a store page is malformed") from exc
    return items


@dataclass
class _Page:
    seq: int
    keys: set[str]
    size: int


@dataclass
class PagePlan:
    """What one commit does to the pages: new contents, deletions, and where keys now live."""

    writes: dict[bytes, dict[str, bytes]] = field(default_factory=dict)
    deletes: list[bytes] = field(default_factory=list)
    placed: dict[str, bytes | None] = field(default_factory=dict)
    open_page: bytes | None = None


class PageIndex:
    """Which page each entry lives in, and each page's sequence number and size."""

    def __init__(self) -> None:
        self.pages: dict[bytes, _Page] = {}
        self.page_of: dict[str, bytes] = {}
        self.open_page: bytes | None = None

    def load(self, page_id: bytes, seq: int, items: list[tuple[str, bytes]]) -> None:
        """Record a page read at unlock."""
        keys = {key for key, _ in items}
        size = sum(entry_size(key, value) for key, value in items)
        self.pages[page_id] = _Page(seq, keys, size)
        for key in keys:
            self.page_of[key] = page_id
        if size < PAGE_TARGET and (
            self.open_page is None or size < self.pages[self.open_page].size
        ):
            self.open_page = page_id

    def seq_of(self, page_id: bytes) -> int:
        return self.pages[page_id].seq

    def plan(self, changes: Mapping[str, bytes | None], entries: Mapping[str, bytes]) -> PagePlan:
        """Lay ``changes`` out over the pages without touching the index (commit may fail)."""
        plan = PagePlan(open_page=self.open_page)
        sizes: dict[bytes, int] = {}

        def content(page_id: bytes) -> dict[str, bytes]:
            if page_id not in plan.writes:
                page = self.pages.get(page_id)
                keys = page.keys if page else ()
                plan.writes[page_id] = {key: entries[key] for key in keys}
                sizes[page_id] = page.size if page else 0
            return plan.writes[page_id]

        for key, value in changes.items():
            current = plan.placed[key] if key in plan.placed else self.page_of.get(key)
            if current is not None:
                old = content(current).pop(key)
                sizes[current] -= entry_size(key, old)
            if value is None:
                plan.placed[key] = None
                continue
            size = entry_size(key, value)
            target = current
            if target is None or (content(target) and sizes[target] + size > PAGE_TARGET):
                target = plan.open_page
                if target is None or (content(target) and sizes[target] + size > PAGE_TARGET):
                    target = secrets.token_bytes(32)
                    plan.open_page = target
            content(target)[key] = value
            sizes[target] += size
            plan.placed[key] = target
        for page_id, items in list(plan.writes.items()):
            if not items:
                del plan.writes[page_id]
                if page_id in self.pages:
                    plan.deletes.append(page_id)
                if plan.open_page == page_id:
                    plan.open_page = None
        return plan

    def apply(self, plan: PagePlan, seq: int) -> None:
        """Make a committed plan the index's state."""
        for page_id in plan.deletes:
            del self.pages[page_id]
        for page_id, items in plan.writes.items():
            self.pages[page_id] = _Page(
                seq, set(items), sum(entry_size(k, v) for k, v in items.items())
            )
        for key, home in plan.placed.items():
            if home is None:
                self.page_of.pop(key, None)
            else:
                self.page_of[key] = home
        self.open_page = plan.open_page
