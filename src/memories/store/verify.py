"""Checking a whole store and reporting every problem, rather than stopping at the first.

One sequential pass over the state table decrypts every entry page and every blob; one over the
checkpoints walks the whole chain; the header, the root on disk and both anchors are compared
with what unlock established. Blob keys are HMACs the store cannot reverse, so which blobs the
records refer to is the caller's knowledge: given that set, missing and unreferenced blobs are
reported too. Each problem is a :class:`StoreProblem` saying where (a page id, a blob key or row,
a checkpoint sequence, an anchor path, a header row) and what is wrong, never content.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from memories.errors import IntegrityError
from memories.store.anchor import Anchors
from memories.store.checkpoints import Checkpoint, chain_hash
from memories.store.pages import PageIndex, decode_page
from memories.store.records import (
    BLOB,
    DIGEST_MODULUS,
    ENTRY,
    Root,
    StoreKeys,
    header_digest,
    open_row,
    row_term,
)
from memories.store.staging import STAGED

__all__ = ["StoreProblem", "audit_store", "summary"]

HEADER = "header"
ROOT = "root"
PAGE = "page"
BLOB_AREA = "blob"
CHECKPOINT = "checkpoint"
ANCHOR = "anchor"


@dataclass(frozen=True)
class StoreProblem:
    """One thing wrong with the store.

    ``area`` is one of "header", "root", "page", "blob", "checkpoint", "anchor"; ``ref`` names
    the place within it (a page id prefix, a blob key or ``row:<id prefix>`` for a blob whose
    key is unknown, a checkpoint sequence number or range, an anchor's path, a header row);
    ``what`` says what is wrong.
    """

    area: str
    ref: str
    what: str

    def describe(self) -> str:
        return f"{self.area} {self.ref}: {self.what}"

    def to_dict(self) -> dict[str, str]:
        return {"area": self.area, "ref": self.ref, "what": self.what}


def audit_store(
    conn: sqlite3.Connection,
    keys: StoreKeys,
    root: Root,
    index: PageIndex,
    entries: Mapping[str, bytes],
    *,
    anchors: Anchors | None,
    referenced_blobs: Iterable[str] | None,
    chain_hash_at: Callable[[int], str | None],
) -> tuple[list[StoreProblem], dict[str, int]]:
    """Every problem found, and counts (entries, pages, blobs, checkpoints).

    Raises ``sqlite3.Error`` for the caller's boundary to translate; never for what it finds.
    """
    problems: list[StoreProblem] = []
    problems += _header(conn, keys, root)
    wanted = None
    if referenced_blobs is not None:
        wanted = {keys.row_id_for(BLOB, key): key for key in referenced_blobs}
    state, counts = _state(conn, keys, root, index, entries, wanted)
    problems += state
    chain, counts["checkpoints"] = _chain(conn, keys, root)
    problems += chain
    if anchors is not None and root.seq > 0:
        problems += _anchors(anchors, keys, root, chain_hash_at)
    return problems, counts


def _header(conn: sqlite3.Connection, keys: StoreKeys, root: Root) -> list[StoreProblem]:
    rows = {str(n): bytes(v) for n, v in conn.execute("SELECT name, value FROM header")}
    problems = []
    if root.version >= 2 and header_digest(rows) != root.header:
        problems.append(
            StoreProblem(
                HEADER,
                "kdf/master",
                "the key header is not the one the root binds (it was changed or put back)",
            )
        )
    try:
        on_disk = Root.open(keys, rows.get("root", b""))
    except IntegrityError:
        problems.append(StoreProblem(ROOT, "root", "the root on disk does not decrypt"))
    else:
        if on_disk != root:
            problems.append(
                StoreProblem(ROOT, "root", "the root on disk is not the one the store unlocked")
            )
    return problems


def _state(
    conn: sqlite3.Connection,
    keys: StoreKeys,
    root: Root,
    index: PageIndex,
    entries: Mapping[str, bytes],
    wanted: dict[bytes, str] | None,
) -> tuple[list[StoreProblem], dict[str, int]]:
    problems: list[StoreProblem] = []
    found: dict[str, bytes] = {}
    seen_pages: set[bytes] = set()
    seen_blobs: set[bytes] = set()
    total = 0
    blobs = 0

    def blob_ref(row_id: bytes) -> str:
        if wanted is not None and row_id in wanted:
            return wanted[row_id]
        return f"row:{row_id.hex()[:16]}"

    for kind, row_id, seq, value in conn.execute("SELECT kind, id, seq, value FROM state"):
        row_id = bytes(row_id)
        if kind == ENTRY:
            ref = row_id.hex()[:16]
            seen_pages.add(row_id)
            total += row_term(row_id, seq, ENTRY)
            page = index.pages.get(row_id)
            if page is None:
                problems.append(StoreProblem(PAGE, ref, "not part of the unlocked state (added)"))
                continue
            if page.seq != seq:
                problems.append(StoreProblem(PAGE, ref, "replaced by another version"))
                continue
            try:
                found.update(decode_page(open_row(keys, row_id, seq, kind, value)))
            except IntegrityError:
                problems.append(StoreProblem(PAGE, ref, "does not decrypt or is malformed"))
        elif kind == BLOB:
            blobs += 1
            seen_blobs.add(row_id)
            if not 0 < seq <= root.seq:
                problems.append(StoreProblem(BLOB_AREA, blob_ref(row_id), "is out of place"))
                continue
            try:
                open_row(keys, row_id, seq, kind, value)
            except IntegrityError:
                problems.append(
                    StoreProblem(BLOB_AREA, blob_ref(row_id), "does not decrypt (altered or moved)")
                )
        elif kind == STAGED:
            continue  # an upload in progress: not part of the state until a commit adopts it
        else:
            problems.append(StoreProblem(PAGE, row_id.hex()[:16], f"has an unknown kind {kind}"))
    for row_id in index.pages.keys() - seen_pages:
        problems.append(StoreProblem(PAGE, row_id.hex()[:16], "is missing"))
    page_problem = any(p.area == PAGE for p in problems)
    if not page_problem and (len(seen_pages) != root.rows or total % DIGEST_MODULUS != root.digest):
        problems.append(StoreProblem(ROOT, "digest", "the pages do not add up to the root"))
    elif not page_problem and found != entries:
        problems.append(
            StoreProblem(PAGE, "entries", "the pages do not hold the entries the store unlocked")
        )
    if wanted is not None:
        for row_id in wanted.keys() - seen_blobs:
            problems.append(StoreProblem(BLOB_AREA, wanted[row_id], "is missing"))
        for row_id in seen_blobs - wanted.keys():
            problems.append(StoreProblem(BLOB_AREA, blob_ref(row_id), "no record refers to it"))
    counts = {"entries": len(found), "pages": len(seen_pages), "blobs": blobs}
    return problems, counts


def _chain(conn: sqlite3.Connection, keys: StoreKeys, root: Root) -> tuple[list[StoreProblem], int]:
    problems: list[StoreProblem] = []
    expected = root.first
    prev: str | None = None
    last = ""
    count = 0
    for seq, value in conn.execute("SELECT seq, value FROM checkpoints ORDER BY seq"):
        count += 1
        value = bytes(value)
        if not root.first <= seq <= root.seq:
            problems.append(StoreProblem(CHECKPOINT, str(seq), "lies outside the recorded chain"))
            continue
        if seq > expected:
            span = str(expected) if seq == expected + 1 else f"{expected}-{seq - 1}"
            problems.append(StoreProblem(CHECKPOINT, span, "is missing"))
            prev = None
        own = chain_hash(value)
        expected, last = seq + 1, own
        try:
            entry = Checkpoint.open(keys, seq, value)
        except IntegrityError:
            problems.append(StoreProblem(CHECKPOINT, str(seq), "does not decrypt or is malformed"))
            prev = None
            continue
        if seq == root.first:
            if (root.genesis and own != root.genesis) or (root.first == 1 and entry.prev):
                problems.append(
                    StoreProblem(CHECKPOINT, str(seq), "is not the oldest entry the root records")
                )
        elif prev is not None and entry.prev != prev:
            problems.append(
                StoreProblem(
                    CHECKPOINT,
                    f"{seq - 1}-{seq}",
                    "the link between these entries is broken (one was replaced, or they were "
                    "reordered)",
                )
            )
        prev = own
    if expected <= root.seq:
        span = str(expected) if expected == root.seq else f"{expected}-{root.seq}"
        problems.append(StoreProblem(CHECKPOINT, span, "is missing"))
    elif root.seq and last != root.checkpoint:
        problems.append(
            StoreProblem(CHECKPOINT, str(root.seq), "is not the newest entry the root records")
        )
    return problems, count


def _anchors(
    anchors: Anchors,
    keys: StoreKeys,
    root: Root,
    chain_hash_at: Callable[[int], str | None],
) -> list[StoreProblem]:
    findings, torn = anchors.check(
        keys, root.seq, root.checkpoint, chain_hash_at, rekeyed=root.rekeyed
    )
    problems = [StoreProblem(ANCHOR, f.path, f.message) for f in findings]
    problems += [
        StoreProblem(
            ANCHOR,
            str(anchor.path),
            "one of its two slots does not verify (an interrupted write leaves this; the next "
            "commit rewrites it)",
        )
        for anchor in torn
    ]
    return problems


def summary(problems: list[StoreProblem]) -> str:
    """One line for a damaged store: the first problem, and how many more there are."""
    extra = len(problems) - 1
    more = "" if extra <= 0 else f" (and {extra} more problem{'s' if extra > 1 else ''})"
    return f"{problems[0].describe()}{more}"
