"""The encrypted store: one SQLite file, one writer, one transaction per mutation.

A ``Store`` is opened (taking the single-writer lock), then unlocked with the password. While
unlocked it holds the master key's subkeys and the decrypted *entries* (small, mutable records
the domain enumerates, packed into pages: see ``pages``); *blobs* (write-once content such as
revisions) stay encrypted on disk until read. ``lock`` wipes the keys, drops every plaintext
cache and bumps ``generation`` so work started before the lock can tell that its result is stale.

A mutation is staged in a ``Mutation`` overlay and committed by ``commit``: changed rows, the new
root and a checkpoint go to disk in one ``BEGIN IMMEDIATE … COMMIT`` with ``synchronous=FULL``;
only after that succeeds does the in-memory state change. The cost of a commit depends on what it
changes, not on how many records the store holds.

Not thread-safe: the service serializes calls under its lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from memories.crypto import (
    KdfParams,
    canonical_bytes,
    derive_key,
    unwrap_key,
    wipe,
    wrap_key,
)
from memories.errors import (
    ConflictError,
    DeniedError,
    IntegrityError,
    LockedError,
    MemoriesError,
    NotFoundError,
)
from memories.store.anchor import Anchor
from memories.store.checkpoints import Checkpoint, Detail, chain_hash
from memories.store.lock import StoreLock
from memories.store.pages import PageIndex, decode_page, encode_page
from memories.store.records import (
    BLOB,
    DIGEST_MODULUS,
    ENTRY,
    Root,
    StoreKeys,
    open_row,
    row_term,
    seal_row,
)
from memories.store.schema import FORMAT_NAME, MIGRATIONS, apply_migrations

__all__ = ["Mutation", "Store", "connect", "wrap_master"]

log = logging.getLogger(__name__)

_LOCKED_MESSAGE = "the vault is locked; run `memories unlock`"


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the store's pragmas: durable commits, no temporary files on disk."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


def wrap_master(kek: bytearray, master: bytearray, store_id: str, kdf: KdfParams) -> bytes:
    return wrap_key(kek, master, purpose="master", **_master_context(store_id, kdf))


def _master_context(store_id: str, kdf: KdfParams) -> dict[str, str | int]:
    return {"store": store_id, "kdf": canonical_bytes(kdf.to_dict()).decode("utf-8")}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Session:
    """Everything that exists only while unlocked."""

    keys: StoreKeys
    root: Root
    entries: dict[str, bytes]
    index: PageIndex
    # Keys by their first path segment ("asset", "vault", ...), so a prefix listing of one
    # small group does not scan every entry.
    groups: dict[str, set[str]] = field(default_factory=dict)

    def file(self, key: str) -> None:
        self.groups.setdefault(key.split("/", 1)[0], set()).add(key)

    def unfile(self, key: str) -> None:
        self.groups.get(key.split("/", 1)[0], set()).discard(key)


class Mutation:
    """Changes staged against the store; nothing happens until ``Store.commit``.

    Reads see the staged changes on top of the store, so a mutation can be built step by step.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self.entries: dict[str, bytes | None] = {}
        self.blobs: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        if key in self.entries:
            return self.entries[key]
        return self._store.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.entries[key] = bytes(value)

    def delete(self, key: str) -> None:
        self.entries[key] = None

    def get_blob(self, key: str) -> bytes:
        if key in self.blobs:
            return self.blobs[key]
        return self._store.get_blob(key)

    def put_blob(self, key: str, value: bytes) -> None:
        """Stage a write-once blob; committing one whose key exists raises ``ConflictError``."""
        self.blobs[key] = bytes(value)

    @property
    def empty(self) -> bool:
        return not self.entries and not self.blobs


class Store:
    """An open store file. Use ``Store.open`` (or ``memories.store.create_store`` first)."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        *,
        lock: StoreLock | None,
        anchor: Anchor | None,
    ) -> None:
        self.path = path
        self._conn = conn
        self._lock = lock
        self._anchor = anchor
        self._session: _Session | None = None
        self.generation = 0
        header = self._read_header()
        self.store_id = _store_id(header)
        self._kdf = KdfParams.from_dict(_json(header, "kdf"))
        self._kdf.check()
        self._wrapped_master = header["master"]

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> Store:
        """Open ``path`` and take its single-writer lock; the store starts locked.

        Raises ``NotFoundError`` when there is no store, ``BusyError`` when another process has
        it open, ``UsageError`` for a store from a newer release, ``IntegrityError`` for a file
        that is not a memories store.
        """
        path = Path(path)
        if not path.exists():
            raise NotFoundError(f"no store at {path}; create one with `memories init`")
        lock = StoreLock(path)
        lock.acquire()
        conn: sqlite3.Connection | None = None
        try:
            conn = connect(path)
            _migrate(conn)
            return cls(path, conn, lock=lock, anchor=Anchor(path))
        except (sqlite3.Error, MemoriesError) as exc:
            if conn is not None:
                conn.close()
            lock.release()
            if isinstance(exc, MemoriesError):
                raise
            raise IntegrityError(f"{path} is not a readable memories store") from exc

    def close(self) -> None:
        """Lock, close the file and release the single-writer lock (idempotent)."""
        self.lock()
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        if self._anchor is not None:
            self._anchor.close()
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def unlocked(self) -> bool:
        return self._session is not None

    @property
    def kdf(self) -> KdfParams:
        return self._kdf

    def unlock(self, password: str) -> None:
        """Derive the key, unwrap the master key and check the whole state adds up.

        Raises ``DeniedError`` for a wrong password (without saying which part failed) and
        ``IntegrityError`` when a row was altered, deleted, swapped or the file was rolled back.
        """
        if self._session is not None:
            self.verify_password(password)
            return
        master = self._unwrap(password)
        self._establish(StoreKeys(master, self.store_id))

    def lock(self) -> None:
        """Forget every key and plaintext; bump the generation. Harmless when already locked."""
        session, self._session = self._session, None
        if session is None:
            return
        session.keys.wipe()
        session.entries.clear()
        session.groups.clear()
        session.index = PageIndex()
        self.generation += 1

    def verify_password(self, password: str) -> None:
        """Raise ``DeniedError`` unless ``password`` opens this store (used for elevation)."""
        master = self._unwrap(password)
        wipe(master)

    def change_password(
        self,
        old: str,
        new: str,
        *,
        time_cost: int | None = None,
        memory_kib: int | None = None,
        parallelism: int | None = None,
    ) -> None:
        """Rewrap the master key under ``new``; parameters only ever go up.

        Nothing else is re-encrypted. Raises ``LockedError``, ``DeniedError`` (wrong ``old``),
        ``UsageError`` (parameters below the floor) or ``MemoriesError`` (write failed).
        """
        session = self._require()
        master = self._unwrap(old)
        wipe(master)
        current = self._kdf
        kdf = current.upgraded(
            time_cost=time_cost or current.time_cost,
            memory_kib=memory_kib or current.memory_kib,
            parallelism=parallelism or current.parallelism,
        )
        kek = derive_key(new, kdf)
        try:
            wrapped = wrap_master(kek, session.keys.master, self.store_id, kdf)
        finally:
            wipe(kek)
        kdf_bytes = json.dumps(kdf.to_dict(), sort_keys=True).encode("utf-8")
        self._commit(
            Mutation(self),
            action="store.password",
            details={},
            header={"kdf": kdf_bytes, "master": wrapped},
        )
        self._kdf = kdf
        self._wrapped_master = wrapped

    # -- reading ----------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        """The entry under ``key``, or None. Raises ``LockedError``."""
        return self._require().entries.get(key)

    def entries(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        """Entries whose key starts with ``prefix``, sorted by key (a snapshot: safe to commit while
        iterating). A prefix with a "/" lists only that first path segment's group."""
        session = self._require()
        if "/" in prefix:
            keys: Iterable[str] = session.groups.get(prefix.split("/", 1)[0], ())
        else:
            keys = session.entries
        entries = session.entries
        return iter(sorted((k, entries[k]) for k in keys if k.startswith(prefix)))

    def keys(self, prefix: str) -> list[str]:
        """Entry keys starting with ``prefix`` (grouped like ``entries``), without their values."""
        session = self._require()
        group = (
            session.groups.get(prefix.split("/", 1)[0], set()) if "/" in prefix else session.entries
        )
        return [key for key in group if key.startswith(prefix)]

    def count(self) -> int:
        """How many entries the state holds."""
        return len(self._require().entries)

    def get_blob(self, key: str) -> bytes:
        """Decrypt the blob under ``key``.

        Blobs are never deleted, so one that is not there was lost: ``IntegrityError``, as for
        one that was altered. Raises ``LockedError`` when locked.
        """
        session = self._require()
        row_id = session.keys.row_id_for(BLOB, key)
        found = self._conn.execute(
            "SELECT seq, value FROM state WHERE kind = 1 AND id = ?", (row_id,)
        ).fetchone()
        if found is None or not 0 < found[0] <= session.root.seq:
            raise IntegrityError("a store record is missing; the store is damaged")
        return open_row(session.keys, row_id, found[0], BLOB, found[1])

    def has_blob(self, key: str) -> bool:
        """Whether a blob exists under ``key`` (without decrypting it)."""
        session = self._require()
        row_id = session.keys.row_id_for(BLOB, key)
        found = self._conn.execute("SELECT 1 FROM state WHERE kind = 1 AND id = ?", (row_id,))
        return found.fetchone() is not None

    @property
    def seq(self) -> int:
        """The sequence number of the newest commit."""
        return self._require().root.seq

    def checkpoints(self, *, limit: int = 100, before: int | None = None) -> list[Checkpoint]:
        """The newest checkpoints (newest first), decrypted. Raises ``LockedError``."""
        session = self._require()
        upper = session.root.seq + 1 if before is None else before
        rows = self._conn.execute(
            "SELECT seq, value FROM checkpoints WHERE seq < ? ORDER BY seq DESC LIMIT ?",
            (upper, limit),
        ).fetchall()
        return [Checkpoint.open(session.keys, seq, value) for seq, value in rows]

    # -- writing ----------------------------------------------------------------------------

    def mutation(self) -> Mutation:
        """A fresh overlay to stage changes in. Raises ``LockedError``."""
        self._require()
        return Mutation(self)

    def commit(
        self, mutation: Mutation, *, action: str, details: Mapping[str, Detail] | None = None
    ) -> int:
        """Write ``mutation`` with its checkpoint in one transaction; returns the new seq.

        On any failure nothing changes, in memory or on disk, and ``MemoriesError`` says why.
        Raises ``LockedError`` when locked.
        """
        return self._commit(mutation, action=action, details=details or {})

    def record_intent(self, action: str, details: Mapping[str, Detail] | None = None) -> int:
        """Commit an intent (a checkpoint without changes) before delivering anything.

        Raises ``DeniedError`` when the intent cannot be written: no record, no delivery.
        """
        try:
            return self._commit(Mutation(self), action=action, details=details or {})
        except LockedError:
            raise
        except MemoriesError as exc:
            raise DeniedError(
                f"delivery denied: the audit record could not be written ({exc.message})"
            ) from exc

    def verify(self) -> dict[str, int]:
        """Decrypt every row and walk the whole checkpoint chain.

        Returns counts; raises ``IntegrityError`` on the first problem. Costs time proportional
        to the store, unlike ``unlock``.
        """
        session = self._require()
        found: dict[str, bytes] = {}
        pages = blobs = 0
        for kind, row_id, seq, value in self._conn.execute(
            "SELECT kind, id, seq, value FROM state"
        ):
            if kind == ENTRY:
                page = session.index.pages.get(row_id)
                if page is None or page.seq != seq:
                    raise IntegrityError("a store record was added or replaced since unlock")
                found.update(decode_page(open_row(session.keys, row_id, seq, kind, value)))
                pages += 1
            elif kind != BLOB or not 0 < seq <= session.root.seq:
                raise IntegrityError("a store record is out of place")
            else:
                open_row(session.keys, row_id, seq, kind, value)
                blobs += 1
        if pages != len(session.index.pages) or found != session.entries:
            raise IntegrityError("a store record is missing")
        entries = len(found)
        prev = ""
        count = 0
        for seq, value in self._conn.execute("SELECT seq, value FROM checkpoints ORDER BY seq"):
            count += 1
            entry = Checkpoint.open(session.keys, seq, value)
            if seq != count or entry.prev != prev:
                raise IntegrityError("the checkpoint chain is broken")
            prev = chain_hash(value)
        if count != session.root.seq or prev != session.root.checkpoint:
            raise IntegrityError("the checkpoint chain does not end at the root")
        return {"entries": entries, "pages": pages, "blobs": blobs, "checkpoints": count}

    # -- internals --------------------------------------------------------------------------

    def _require(self) -> _Session:
        if self._session is None:
            raise LockedError(_LOCKED_MESSAGE)
        return self._session

    def _read_header(self) -> dict[str, bytes]:
        rows = self._conn.execute("SELECT name, value FROM header").fetchall()
        header = {str(name): bytes(value) for name, value in rows}
        if header.get("format") != FORMAT_NAME:
            raise IntegrityError(f"{self.path} is not a memories store")
        for name in ("store_id", "kdf", "master", "root"):
            if name not in header:
                raise IntegrityError("the store header is incomplete")
        return header

    def _unwrap(self, password: str) -> bytearray:
        kek = derive_key(password, self._kdf)
        try:
            return unwrap_key(
                kek,
                self._wrapped_master,
                purpose="master",
                **_master_context(self.store_id, self._kdf),
            )
        except IntegrityError:
            raise DeniedError("the password is not correct") from None
        finally:
            wipe(kek)

    def _establish(self, keys: StoreKeys) -> None:
        """Load and check the state under ``keys``; on any failure the keys are wiped."""
        established = False
        try:
            blob = self._conn.execute("SELECT value FROM header WHERE name = 'root'").fetchone()
            root = Root.open(keys, bytes(blob[0]))
            entries: dict[str, bytes] = {}
            index = PageIndex()
            total = 0
            cursor = self._conn.execute("SELECT id, seq, value FROM state WHERE kind = 0")
            for row_id, seq, value in cursor:
                if not 0 < seq <= root.seq:
                    raise IntegrityError("a store record is out of place")
                total += row_term(row_id, seq, ENTRY)
                items = decode_page(open_row(keys, row_id, seq, ENTRY, value))
                before = len(entries)
                entries.update(items)
                if len(entries) != before + len(items):
                    raise IntegrityError("a store record appears twice")
                index.load(row_id, seq, items)
            if len(index.pages) != root.rows or total % DIGEST_MODULUS != root.digest:
                raise IntegrityError(
                    "the store's records do not match its root (a record was deleted, added or "
                    "rolled back)"
                )
            self._check_head(keys, root)
            if self._anchor is not None:
                self._anchor.check(keys, root.seq, root.checkpoint)
            established = True
        finally:
            if not established:  # whatever went wrong, the keys do not outlive the attempt
                keys.wipe()
        self._session = _Session(keys=keys, root=root, entries=entries, index=index)
        for key in entries:
            self._session.file(key)
        self.generation += 1

    def _check_head(self, keys: StoreKeys, root: Root) -> None:
        newest = self._conn.execute(
            "SELECT seq, value FROM checkpoints ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        if newest is None:
            if root.seq != 0:
                raise IntegrityError("the store's checkpoints are missing")
            return
        seq, value = newest
        if seq != root.seq or chain_hash(value) != root.checkpoint:
            raise IntegrityError("the newest checkpoint does not match the store root")
        Checkpoint.open(keys, seq, value)

    def _commit(
        self,
        mutation: Mutation,
        *,
        action: str,
        details: Mapping[str, Detail],
        header: Mapping[str, bytes] | None = None,
    ) -> int:
        session = self._require()
        keys = session.keys
        seq = session.root.seq + 1
        index = session.index
        # Only the pages the changes touch are rewritten: the cost follows the mutation.
        plan = index.plan(mutation.entries, session.entries)
        total = session.root.digest
        count = len(index.pages)
        for page_id in plan.deletes:
            total -= row_term(page_id, index.seq_of(page_id), ENTRY)
            count -= 1
        writes: list[tuple[int, bytes, int, bytes]] = []
        for page_id, items in plan.writes.items():
            if page_id in index.pages:
                total -= row_term(page_id, index.seq_of(page_id), ENTRY)
            else:
                count += 1
            total += row_term(page_id, seq, ENTRY)
            sealed = seal_row(keys, page_id, seq, ENTRY, encode_page(items.items()))
            writes.append((ENTRY, page_id, seq, sealed))
        total %= DIGEST_MODULUS
        blobs = []
        for key, value in mutation.blobs.items():
            row_id = keys.row_id_for(BLOB, key)
            blobs.append((BLOB, row_id, seq, seal_row(keys, row_id, seq, BLOB, value)))
        checkpoint = Checkpoint(
            seq=seq,
            at=_now(),
            action=action,
            prev=session.root.checkpoint,
            digest=f"{total:064x}",
            details=dict(details),
        )
        sealed_checkpoint = checkpoint.seal(keys)
        root = Root(seq=seq, rows=count, digest=total, checkpoint=chain_hash(sealed_checkpoint))
        self._write(
            writes,
            blobs,
            plan.deletes,
            seq,
            sealed_checkpoint,
            {**(header or {}), "root": root.seal(keys)},
        )
        # Only now, with the transaction durable, does memory follow.
        for key, staged in mutation.entries.items():
            if staged is None:
                session.entries.pop(key, None)
                session.unfile(key)
            else:
                session.entries[key] = staged
                session.file(key)
        index.apply(plan, seq)
        session.root = root
        if self._anchor is not None:
            self._anchor.write(keys, seq, root.checkpoint)
        return seq

    def _write(
        self,
        writes: list[tuple[int, bytes, int, bytes]],
        blobs: list[tuple[int, bytes, int, bytes]],
        deletes: list[bytes],
        seq: int,
        checkpoint: bytes,
        header: Mapping[str, bytes],
    ) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            committed = False
            try:
                if deletes:
                    conn.executemany(
                        "DELETE FROM state WHERE kind = 0 AND id = ?", [(d,) for d in deletes]
                    )
                if writes:
                    conn.executemany(
                        "INSERT OR REPLACE INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)",
                        writes,
                    )
                if blobs:  # write-once: a plain INSERT refuses an existing key
                    conn.executemany(
                        "INSERT INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)", blobs
                    )
                conn.execute(
                    "INSERT INTO checkpoints (seq, value) VALUES (?, ?)", (seq, checkpoint)
                )
                conn.executemany(
                    "UPDATE header SET value = ? WHERE name = ?",
                    [(value, name) for name, value in header.items()],
                )
                conn.execute("COMMIT")
                committed = True
            finally:
                if not committed:  # any failure, even an interrupt, leaves no open transaction
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
        except sqlite3.IntegrityError as exc:
            raise ConflictError("a write-once record already exists; nothing was changed") from exc
        except sqlite3.Error as exc:
            log.warning("store commit failed: %s", type(exc).__name__)
            raise MemoriesError(
                f"could not write to the store ({_reason(exc)}); nothing was changed"
            ) from exc


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an existing file up to this release's format (one transaction)."""
    row = conn.execute("SELECT value FROM header WHERE name = 'migrations'").fetchone()
    if row is None:
        raise IntegrityError("the store header is incomplete")
    try:
        applied = json.loads(bytes(row[0]))
        if not isinstance(applied, list) or not all(isinstance(n, str) for n in applied):
            raise ValueError("bad migrations")
    except ValueError as exc:
        raise IntegrityError("the store header is malformed") from exc
    if applied == [m.name for m in MIGRATIONS]:
        return
    conn.execute("BEGIN IMMEDIATE")
    committed = False
    try:
        apply_migrations(conn, applied)
        conn.execute("COMMIT")
        committed = True
    finally:
        if not committed:
            conn.execute("ROLLBACK")


_REASONS = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_IOERR": "an I/O error occurred",
    "SQLITE_READONLY": "the file is read-only",
    "SQLITE_BUSY": "the file is busy",
    "SQLITE_CORRUPT": "the file is corrupt",
}


def _reason(exc: sqlite3.Error) -> str:
    """A short, content-free description of a SQLite failure."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return _REASONS.get("_".join(name.split("_")[:2]), "a database error occurred")


def _store_id(header: Mapping[str, bytes]) -> str:
    text = header["store_id"].decode("ascii", errors="replace")
    if len(text) != 32 or any(c not in "0123456789abcdef" for c in text):
        raise IntegrityError("the store header is malformed")
    return text


def _json(header: Mapping[str, bytes], name: str) -> dict[str, object]:
    try:
        value = json.loads(header[name])
    except ValueError as exc:
        raise IntegrityError("the store header is malformed") from exc
    if not isinstance(value, dict):
        raise IntegrityError("the store header is malformed")
    return value
