"""The encrypted store: one SQLite file, one writer, one transaction per mutation.

A ``Store`` is opened (taking the single-writer lock), then unlocked with the password. While
unlocked it holds the master key's subkeys and the decrypted *entries* (small, mutable records
the domain enumerates, packed into pages: see ``pages``); *blobs* (write-once content such as
revisions) stay encrypted on disk until read. ``lock`` wipes the keys, drops every plaintext
cache and bumps ``generation`` so work started before the lock can tell that its result is stale.

A mutation is staged in a ``Mutation`` overlay and committed by ``commit``: changed rows, the new
root and a checkpoint go to disk in one ``BEGIN IMMEDIATE … COMMIT`` with ``synchronous=FULL``;
only after that succeeds does the in-memory state change, and only then are the rollback
anchors advanced (see ``anchor``). The cost of a commit depends on what it changes, not on how
many records the store holds.

Unlock refuses, each with its own error (see ``memories.store.errors``): a wrong password, a
header that does not belong to the data, rows that do not add up to the root, a checkpoint chain
whose ends were cut, and a store its anchors do not vouch for.

Threads. The caller (the service) serializes calls under its own lock, with one exception: an
intent batch is sealed under the caller's lock (:meth:`Store.stage_intents`) and written without
it (:meth:`StagedIntents.write`), so readers can compute while its fsync runs. For that the
store has an I/O lock of its own. It guards the write connection and every change of the root:
a commit, a staged intent batch from staging to written, a listing of the checkpoints, a
verification, a lock. A commit that arrives while a batch is being written waits for it and
only then plans its rows on the root the batch left, so the chain stays one line. Blob reads use
a second, read-only connection (WAL lets it read beside the writer); blobs are written once and
referenced only once their commit is durable, so such a read never sees half of a change.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from memories.crypto import KdfParams, derive_key, new_key, unwrap_key, wipe
from memories.errors import (
    DeniedError,
    IntegrityError,
    LockedError,
    MemoriesError,
    NotFoundError,
    UsageError,
)
from memories.paths import state_dir as default_state_dir
from memories.store.anchor import AnchorFinding, Anchors, acceptance_details, worst_finding
from memories.store.checkpoints import Checkpoint, Detail, chain_hash, read_chain
from memories.store.errors import HeaderChangedError, RollbackError, sqlite_boundary
from memories.store.header import (
    kdf_bytes,
    master_context,
    read_header,
    wrap_master,
    wrap_master_for,
)
from memories.store.intents import StagedIntents, denied, now, seal_intents
from memories.store.lock import StoreLock
from memories.store.mutation import Mutation
from memories.store.opening import HEADER_CHANGED, check_chain_ends, load_pages, open_root
from memories.store.pages import PageIndex
from memories.store.records import (
    BLOB,
    Root,
    StoreKeys,
    header_digest,
    open_row,
)
from memories.store.rotate import reseal_all
from memories.store.schema import connect, connect_reader, migrate
from memories.store.sealing import seal_rows, write_sealed
from memories.store.staging import adopt_rows, delete_all, delete_area, staged_rows
from memories.store.transaction import transaction
from memories.store.verify import StoreProblem, audit_store, summary

__all__ = ["Mutation", "StagedIntents", "Store", "connect", "wrap_master"]

log = logging.getLogger(__name__)

_LOCKED_MESSAGE = "the vault is locked; run `memories unlock`"
# Which anchor finding explains a refusal best, most serious first.


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

    def forget(self) -> None:
        """Wipe the keys and drop every decrypted record."""
        self.keys.wipe()
        self.entries.clear()
        self.groups.clear()
        self.index = PageIndex()


class Store:
    """An open store file. Use ``Store.open`` (or ``memories.store.create_store`` first)."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        *,
        lock: StoreLock | None,
        state_dir: Path | None,
        reader: sqlite3.Connection | None = None,
    ) -> None:
        """``state_dir`` None means no rollback anchors (only while a new store is built).

        ``reader`` is a read-only connection for blob reads; without one they share ``conn``.
        """
        self.path = path
        self._conn = conn
        self._reader = reader
        # Guards the write connection and every change of the root (see the module docstring).
        self._io = threading.RLock()
        self._read_guard = threading.Lock()
        self._lock = lock
        self._session: _Session | None = None
        self.generation = 0
        self._entries_version = 0
        self._load_header()
        self._anchors = None if state_dir is None else Anchors(path, self.store_id, Path(state_dir))

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, state_dir: Path | None = None) -> Store:
        """Open ``path`` and take its single-writer lock; the store starts locked.

        ``state_dir`` holds the second rollback anchor (default ``memories.paths.state_dir()``).

        Raises ``NotFoundError`` when there is no store, ``BusyError`` when another process has
        it open, ``NewerFormatError`` (a ``UsageError``) for a store from a newer release,
        ``NotAStoreError`` for a file that is not a memories store, ``MalformedHeaderError``
        and ``UnsafeKdfError`` (``IntegrityError``\\ s) for a damaged or crafted header, and
        ``MemoriesError`` naming the cause when the data home cannot be used (read-only, full).
        """
        path = Path(path)
        if not path.exists():
            raise NotFoundError(f"no store at {path}; create one with `memories init`")
        lock = StoreLock(path)
        lock.acquire()
        conn: sqlite3.Connection | None = None
        reader: sqlite3.Connection | None = None
        opened = False
        try:
            conn = connect(path)
            migrate(conn, path)
            reader = connect_reader(path)
            store = cls(
                path,
                conn,
                lock=lock,
                state_dir=state_dir if state_dir else default_state_dir(),
                reader=reader,
            )
            opened = True
            return store
        finally:
            if not opened:  # any failure, even an interrupt, leaves nothing open or locked
                for connection in (reader, conn):
                    if connection is not None:
                        connection.close()
                lock.release()

    def close(self) -> None:
        """Lock, close the file and release the single-writer lock (idempotent).

        Waits for an intent batch being written (see :meth:`stage_intents`).
        """
        with self._io:
            self.lock()
            with contextlib.suppress(sqlite3.Error):
                # The reader first: the writer, closing last, checkpoints the WAL into the file.
                if self._reader is not None:
                    with self._read_guard:
                        self._reader.close()
                self._conn.close()
            if self._anchors is not None:
                self._anchors.close()
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

    def unlock(self, password: str, *, accept_rollback: bool = False) -> tuple[AnchorFinding, ...]:
        """Derive the key, unwrap the master key and check the whole state adds up.

        Returns the anchor findings that ``accept_rollback`` accepted (empty normally). With
        ``accept_rollback`` a store its anchors do not vouch for is opened anyway: a
        ``store.rollback_accepted`` checkpoint records what was accepted (sequence numbers and
        reasons, never content) and both anchors are rewritten to the current state.

        Raises ``DeniedError`` for a wrong password, ``HeaderChangedError`` when the password
        opens the header present but that header is not this store's, ``RollbackError`` when
        the anchors are missing, damaged, ahead of the store or of another history,
        ``IntegrityError`` when a row or checkpoint was altered, deleted or swapped,
        ``MemoriesError`` when the file cannot be read or the acceptance cannot be written.
        """
        if self._session is not None:
            self.verify_password(password)
            return ()
        with self._io:
            with sqlite_boundary("read the store"):
                self._load_header()
            master = self._unwrap(password)
            return self._establish(
                StoreKeys(master, self.store_id), accept_rollback=accept_rollback
            )

    def lock(self) -> None:
        """Forget every key and plaintext; bump the generation. Harmless when already locked.

        An intent batch being written (see :meth:`stage_intents`) is finished first: its
        anchors are advanced under the keys, and what it settles happens before the lock.
        """
        with self._io:
            session, self._session = self._session, None
            if self._anchors is not None:
                self._anchors.close()
            if session is None:
                return
            session.forget()
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

        Nothing else is re-encrypted, so this stays cheap; the old header no longer opens the
        store because the root binds the header rows (use ``rotate_master_key`` to also make
        the old password useless against a copy of the old header). Raises ``LockedError``,
        ``DeniedError`` (wrong ``old``), ``UsageError`` (parameters out of range) or
        ``MemoriesError`` (write failed).
        """
        session = self._require()
        self.verify_password(old)
        current = self._kdf
        kdf = current.upgraded(
            time_cost=time_cost or current.time_cost,
            memory_kib=memory_kib or current.memory_kib,
            parallelism=parallelism or current.parallelism,
        )
        wrapped = wrap_master_for(new, session.keys.master, self.store_id, kdf)
        self._commit(
            Mutation(self),
            action="store.password",
            details={},
            header={"kdf": kdf_bytes(kdf), "master": wrapped},
        )

    def rotate_master_key(
        self,
        password: str,
        new_password: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Generate a new master key and re-seal every page, blob and checkpoint under it.

        Everything happens in one SQLite transaction, so a crash leaves the store entirely
        under the old key or entirely under the new one. The header is rewritten for
        ``new_password`` (or ``password`` again) with a fresh salt; afterwards a copy of any
        earlier header opens nothing. The keys that name blob rows and MAC the anchors are
        carried over (re-wrapped), since blob row ids cannot be recomputed. ``progress(done,
        total)`` is called as rows are re-sealed. The one transaction needs free disk space
        about the size of the store (the WAL holds every re-sealed row until it commits).
        Returns the new sequence number.

        Raises ``LockedError``, ``DeniedError`` (wrong ``password``), ``IntegrityError`` when
        a row or checkpoint does not verify (nothing is changed; run ``verify_all``) and
        ``MemoriesError`` when the write fails (nothing is changed).
        """
        session = self._require()
        old = session.keys
        master = self._unwrap(password)
        same = hmac.compare_digest(bytes(master), bytes(old.master))
        wipe(master)
        if not same:
            raise HeaderChangedError(HEADER_CHANGED)
        kdf = self._kdf.upgraded(self._kdf.time_cost, self._kdf.memory_kib, self._kdf.parallelism)
        fresh = StoreKeys(new_key(), self.store_id)
        fresh.carry(bytearray(old.row_id), bytearray(old.anchor))
        rotated = False
        try:
            chosen = new_password if new_password is not None else password
            wrapped = wrap_master_for(chosen, fresh.master, self.store_id, kdf)
            header = {"kdf": kdf_bytes(kdf), "master": wrapped, **fresh.wrap_carried()}
            seq = self._commit(
                Mutation(self),
                action="store.master_rotated",
                details={"password_changed": new_password is not None},
                header=header,
                rekey=(fresh, progress),
            )
            rotated = True
        finally:  # whichever keys lost, new or old, are zeroed
            (old if rotated else fresh).wipe()
        return seq

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
        one that was altered. Raises ``LockedError`` when locked, ``MemoriesError`` when the
        file cannot be read.
        """
        session = self._require()
        row_id = session.keys.row_id_for(BLOB, key)
        found = self._blob_row("SELECT seq, value FROM state WHERE kind = 1 AND id = ?", row_id)
        if found is None or not 0 < found[0] <= session.root.seq:
            raise IntegrityError("a store record is missing; the store is damaged")
        return open_row(session.keys, row_id, found[0], BLOB, found[1])

    def has_blob(self, key: str) -> bool:
        """Whether a blob exists under ``key`` (without decrypting it)."""
        session = self._require()
        row_id = session.keys.row_id_for(BLOB, key)
        return self._blob_row("SELECT 1 FROM state WHERE kind = 1 AND id = ?", row_id) is not None

    def _blob_row(self, sql: str, row_id: bytes) -> tuple[Any, ...] | None:
        """One blob row, read beside a running write when there is a reader connection."""
        with sqlite_boundary("read the store"):
            if self._reader is None:
                with self._io:
                    row: tuple[Any, ...] | None = self._conn.execute(sql, (row_id,)).fetchone()
                return row
            with self._read_guard:
                row = self._reader.execute(sql, (row_id,)).fetchone()
            return row

    @property
    def entries_version(self) -> int:
        """Changes whenever an entry is put or deleted (and at every unlock): a cache of parsed
        entries that remembers it knows whether it is still current."""
        return self._entries_version

    @property
    def seq(self) -> int:
        """The sequence number of the newest commit."""
        return self._require().root.seq

    def checkpoints(self, *, limit: int = 100, before: int | None = None) -> list[Checkpoint]:
        """Up to ``limit`` checkpoints older than ``before`` (default: the newest), newest first.

        Each is decrypted and checked against its neighbours; one that is damaged, missing or
        not chained to its successor is reported in place (``Checkpoint.problem``, see
        ``checkpoints``) and the rest are still returned. Markers do not count towards
        ``limit``. Raises ``LockedError``, ``MemoriesError`` when the file cannot be read.
        """
        with self._io:  # after a batch being written: the root and the rows agree
            session = self._require()
            with sqlite_boundary("read the audit trail"):
                return read_chain(self._conn, session.keys, session.root, limit, before)

    # -- writing ----------------------------------------------------------------------------

    def stage(self, area: bytes, parts: Sequence[tuple[int, bytes]]) -> None:
        """Write ``parts`` (index, bytes) of staging ``area`` to disk, sealed, in one transaction.

        Staged parts are invisible until a commit adopts the area (``Mutation.adopt``); see
        ``memories.store.staging``. Raises ``LockedError``, ``ConflictError`` for a part index
        staged before, ``MemoriesError`` when the file cannot be written.
        """
        with self._io:
            session = self._require()
            rows = list(staged_rows(session.keys, area, session.root.seq, parts))
            with transaction(self._conn):
                self._conn.executemany(
                    "INSERT INTO state (kind, id, seq, value) VALUES (?, ?, ?, ?)", rows
                )

    def discard_staged(self, area: bytes) -> None:
        """Delete every staged part of ``area`` (harmless when there is none, or locked).

        Raises ``MemoriesError`` when the file cannot be written.
        """
        with self._io, transaction(self._conn):
            delete_area(self._conn, area)

    def mutation(self) -> Mutation:
        """A fresh overlay to stage changes in. Raises ``LockedError``."""
        self._require()
        return Mutation(self)

    def commit(
        self, mutation: Mutation, *, action: str, details: Mapping[str, Detail] | None = None
    ) -> int:
        """Write ``mutation`` with its checkpoint in one transaction; returns the new seq.

        On any failure nothing changes, in memory or on disk, and ``MemoriesError`` says why
        ("the disk is full", "the data home is read-only"); ``ConflictError`` for a blob key
        that exists. Raises ``LockedError`` when locked.
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
            raise denied(exc) from exc

    def record_intents(self, items: Sequence[tuple[str, Mapping[str, Detail]]]) -> list[int]:
        """Commit several intents in one transaction (one fsync); returns their seqs in order.

        Each intent is its own chained checkpoint, exactly as :meth:`record_intent` writes it;
        only the durability cost is shared. All or none are written.

        Raises ``DeniedError`` when they cannot be written: no record, no delivery.
        """
        if not items:
            return []
        with self.stage_intents(items) as staged:
            return staged.write()

    def stage_intents(self, items: Sequence[tuple[str, Mapping[str, Detail]]]) -> StagedIntents:
        """Seal several intents as chained checkpoints, to be written by the result.

        The first half of :meth:`record_intents`, for a caller that holds its own lock now and
        wants to release it before the fsync. This takes the store's I/O lock (waiting for a
        batch still being written) and the result keeps it until it is closed: use it as a
        context manager and call :meth:`StagedIntents.write` inside, in the thread that staged
        it. Until then nothing else commits, locks or lists checkpoints; blob reads and
        in-memory reads go on.

        Raises ``LockedError``, ``UsageError`` for an empty batch, ``DeniedError`` when the
        intents cannot be sealed (nothing is held then).
        """
        if not items:
            raise UsageError("an intent batch needs at least one intent")
        self._io.acquire()
        staged = False
        try:
            session = self._require()
            genesis = session.root.genesis or self._genesis()
            sealed = seal_intents(session.keys, session.root, genesis, items)
            staged = True
        except MemoriesError as exc:
            if isinstance(exc, LockedError):
                raise
            raise denied(exc) from exc
        finally:
            if not staged:  # the I/O lock is held only by a batch that will be written
                self._io.release()
        return StagedIntents(*sealed, write=self._write_intents, release=self._io.release)

    # -- verification -----------------------------------------------------------------------

    def verify_all(self, referenced_blobs: Iterable[str] | None = None) -> list[StoreProblem]:
        """Check the whole store and return every problem found (empty: all is well).

        Covers the header binding and the root, every entry page, every blob, the whole
        checkpoint chain and both anchors. With ``referenced_blobs`` (every blob key the
        records refer to, which only the caller knows) it also reports referenced blobs that
        are missing and blobs nobody refers to. Never raises for what it finds; raises
        ``LockedError`` when locked and ``MemoriesError`` when the file cannot be read.
        """
        return self._audit(referenced_blobs)[0]

    def verify(self) -> dict[str, int]:
        """``verify_all`` that raises ``IntegrityError`` naming the first problem.

        Returns counts (entries, pages, blobs, checkpoints). Costs time proportional to the
        store, unlike ``unlock``.
        """
        problems, counts = self._audit(None)
        if problems:
            raise IntegrityError(summary(problems))
        return counts

    def _audit(
        self, referenced_blobs: Iterable[str] | None
    ) -> tuple[list[StoreProblem], dict[str, int]]:
        with self._io, sqlite_boundary("verify the store"):
            session = self._require()
            return audit_store(
                self._conn,
                session.keys,
                session.root,
                session.index,
                session.entries,
                anchors=self._anchors,
                referenced_blobs=referenced_blobs,
                chain_hash_at=self._chain_hash_at,
            )

    # -- internals --------------------------------------------------------------------------

    def _require(self) -> _Session:
        if self._session is None:
            raise LockedError(_LOCKED_MESSAGE)
        return self._session

    def _load_header(self) -> None:
        header = read_header(self._conn, self.path)
        self._header = header.rows
        self.store_id = header.store_id
        self._kdf = header.kdf
        self._wrapped_master = header.rows["master"]

    def _unwrap(self, password: str) -> bytearray:
        kek = derive_key(password, self._kdf)
        try:
            return unwrap_key(
                kek,
                self._wrapped_master,
                purpose="master",
                **master_context(self.store_id, self._kdf),
            )
        except IntegrityError:
            raise DeniedError("the password is not correct") from None
        finally:
            wipe(kek)

    def _checkpoint_row(self, seq: int) -> bytes | None:
        row = self._conn.execute("SELECT value FROM checkpoints WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else bytes(row[0])

    def _chain_hash_at(self, seq: int) -> str | None:
        value = self._checkpoint_row(seq)
        return None if value is None else chain_hash(value)

    def _establish(
        self, keys: StoreKeys, *, accept_rollback: bool = False
    ) -> tuple[AnchorFinding, ...]:
        """Load and check the state under ``keys``; on any failure the keys are wiped."""
        established = False
        try:
            with sqlite_boundary("read the store"):
                root = open_root(self._conn, keys, self._header)
                entries, index = load_pages(self._conn, keys, root)
                check_chain_ends(self._conn, keys, root)
                findings = self._check_anchors(keys, root)
            if findings and not accept_rollback:
                worst = worst_finding(findings)
                raise RollbackError(worst.message, reason=worst.reason)
            established = True
        finally:
            if not established:  # whatever went wrong, the keys do not outlive the attempt
                keys.wipe()
        self._session = _Session(keys=keys, root=root, entries=entries, index=index)
        self._entries_version += 1
        for key in entries:
            self._session.file(key)
        self.generation += 1
        settled = False
        try:
            # Parts of uploads a crashed or killed daemon left behind: nothing refers to them.
            if self._conn.execute("SELECT 1 FROM state WHERE kind = 2 LIMIT 1").fetchone():
                with transaction(self._conn):
                    delete_all(self._conn)
            if findings:
                self._accept(findings)
            elif root.version < 2 and self._anchors is not None:
                self._upgrade_root()
            settled = True
        finally:
            if not settled:  # an acceptance or upgrade that was not recorded leaves it locked
                self.lock()
        return tuple(findings)

    def _check_anchors(self, keys: StoreKeys, root: Root) -> list[AnchorFinding]:
        if self._anchors is None or root.seq == 0:
            return []
        findings, _ = self._anchors.check(
            keys, root.seq, root.checkpoint, self._chain_hash_at, rekeyed=root.rekeyed
        )
        if root.version < 2:  # written before anchors were required: only what exists counts
            findings = [f for f in findings if f.reason != "missing"]
        return findings

    def _accept(self, findings: list[AnchorFinding]) -> None:
        """Record an accepted rollback, then rewrite both anchors to the state as it is."""
        assert self._anchors is not None
        session = self._require()
        details = acceptance_details(findings, session.root.seq)
        log.warning("a store rollback was accepted: %s", details["reasons"])
        seq = self._commit(Mutation(self), action="store.rollback_accepted", details=details)
        self._anchors.create(session.keys, seq, session.root.checkpoint)

    def _upgrade_root(self) -> None:
        """Rewrite a version 1 root as version 2: anchors first (behind), then the commit."""
        assert self._anchors is not None
        session = self._require()
        self._anchors.create(session.keys, session.root.seq, session.root.checkpoint)
        self._commit(Mutation(self), action="store.upgrade", details={"root": 2})

    def _commit(
        self,
        mutation: Mutation,
        *,
        action: str,
        details: Mapping[str, Detail],
        header: Mapping[str, bytes] | None = None,
        rekey: tuple[StoreKeys, Callable[[int, int], None] | None] | None = None,
    ) -> int:
        """Write one commit; with ``rekey`` everything is first re-sealed under the new keys.

        Everything is planned after the I/O lock is taken: a commit that waited for an intent
        batch builds on the root that batch left.
        """
        with self._io:
            return self._commit_locked(
                mutation, action=action, details=details, header=header, rekey=rekey
            )

    def _commit_locked(
        self,
        mutation: Mutation,
        *,
        action: str,
        details: Mapping[str, Detail],
        header: Mapping[str, bytes] | None,
        rekey: tuple[StoreKeys, Callable[[int, int], None] | None] | None,
    ) -> int:
        session = self._require()
        keys = session.keys
        sealing = rekey[0] if rekey else keys
        old_root = session.root
        seq = old_root.seq + 1
        index = session.index
        rows = seal_rows(
            keys, sealing, index, session.entries, mutation.entries, mutation.blobs, old_root, seq
        )
        new_header = {**self._header, **(header or {})}
        conn = self._conn
        with transaction(conn):
            if rekey is not None:  # every existing row and checkpoint, under the new keys
                prev, genesis = reseal_all(conn, keys, sealing, old_root, rekey[1])
            else:
                prev, genesis = old_root.checkpoint, old_root.genesis or self._genesis()
            checkpoint = Checkpoint(
                seq=seq,
                at=now(),
                action=action,
                prev=prev,
                digest=f"{rows.digest:064x}",
                details=dict(details),
            ).seal(sealing)
            head = chain_hash(checkpoint)
            root = Root(
                seq=seq,
                rows=rows.rows,
                digest=rows.digest,
                checkpoint=head,
                # Unlock proved the root binds the header as it is; only a change re-hashes it.
                header=header_digest(new_header)
                if header or not old_root.header
                else old_root.header,
                first=old_root.first,
                genesis=genesis or head,  # "" only while the first checkpoint is being written
                rekeyed=seq if rekey else old_root.rekeyed,
            )
            new_header["root"] = root.seal(sealing)
            write_sealed(conn, rows)
            for area, blob_keys in mutation.adopted:
                adopt_rows(conn, keys, sealing, area, blob_keys, seq)
            conn.execute("INSERT INTO checkpoints (seq, value) VALUES (?, ?)", (seq, checkpoint))
            changed = {**(header or {}), "root": new_header["root"]}
            conn.executemany(
                "INSERT OR REPLACE INTO header (name, value) VALUES (?, ?)", list(changed.items())
            )
        # Only now, with the transaction durable, does memory follow.
        for key, staged in mutation.entries.items():
            if staged is None:
                session.entries.pop(key, None)
                session.unfile(key)
            else:
                session.entries[key] = staged
                session.file(key)
        index.apply(rows.plan, seq)
        if mutation.entries:
            self._entries_version += 1
        session.root = root
        if header:
            self._adopt_header(new_header)
        else:
            self._header = new_header
        if rekey is not None:
            session.keys = sealing
        if self._anchors is not None:
            self._anchors.advance(session.keys, seq, head)
        return seq

    def _write_intents(self, staged: StagedIntents) -> list[int]:
        """The second half: one transaction, then memory and anchors follow (I/O lock held)."""
        session = self._require()
        if session.root.seq + len(staged.rows) != staged.root.seq:
            # Only a bug gets here (the I/O lock keeps the root still); refuse to fork the chain.
            raise MemoriesError("the store changed while intents were being written")
        with transaction(self._conn):
            self._conn.executemany(
                "INSERT INTO checkpoints (seq, value) VALUES (?, ?)", staged.rows
            )
            self._conn.execute(
                "INSERT OR REPLACE INTO header (name, value) VALUES (?, ?)",
                ("root", staged.sealed_root),
            )
        # Only now, with the transaction durable, does memory follow.
        session.root = staged.root
        self._header = {**self._header, "root": staged.sealed_root}
        if self._anchors is not None:
            self._anchors.advance(session.keys, staged.root.seq, staged.root.checkpoint)
        return [seq for seq, _ in staged.rows]

    def _adopt_header(self, header: dict[str, bytes]) -> None:
        self._header = header
        self._kdf = KdfParams.from_dict(json.loads(header["kdf"]))
        self._wrapped_master = header["master"]

    def _genesis(self) -> str:
        """The oldest checkpoint's hash ("" when there is none yet, or a v1 root never had it)."""
        value = self._checkpoint_row(self._require().root.first)
        return "" if value is None else chain_hash(value)
