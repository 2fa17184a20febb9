"""Rollback anchors: two small files outside the database that remember the newest commit.

A store file replaced by an older copy of itself is internally consistent, so nothing inside it
can tell. After every commit the store records ``(seq, checkpoint hash)`` under a MAC in two
anchors, named by the store id:

- ``<store>.<store id>.anchor`` beside the store file, and
- ``$XDG_STATE_HOME/memories/anchors/<store id>.anchor``, outside the data home, so restoring
  one copy of the data folder does not restore both.

At unlock both are checked. A store older than an anchor, at the same sequence with another
history, or whose chain does not pass through the commit an anchor names is refused; so is an
anchor that is missing, empty, truncated, of another store or failing its MAC, because every
store made by this release has written both anchors before it was ever published (``create``).
``Store.unlock(..., accept_rollback=True)`` is the only way past; it is recorded in the audit
trail and rewrites both anchors.

Durability without slowing commits. An anchor must never be *ahead* of a durable commit (that
would refuse a good store) and may be *behind* (that weakens the check for a commit or two).
So anchors are written only after SQLite's ``COMMIT`` returned, which with ``synchronous=FULL``
means the commit is on disk. Those per-commit writes are not synced: each file holds two
512-byte slots, each in its own sector and each self-authenticating, and a commit overwrites
the *older* slot in place. A crash or power loss can tear at most that one slot; the other
still holds an earlier commit, so the anchor reads as behind, never as damaged. Files are only
ever created whole (written aside, synced, renamed, folder synced), when the store is created
and when a rollback is accepted, so a crash never leaves an empty or truncated anchor.

Whoever can replace the store *and* both anchors (for instance by restoring a backup of the
whole home folder) defeats this; anchors guard against restored or synced copies of the data
folder, not against an attacker with full control of the account.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memories.errors import MemoriesError
from memories.fsutil import fsync_dir
from memories.store.errors import os_reason
from memories.store.records import StoreKeys

__all__ = [
    "ANCHOR_FILE_SIZE",
    "AnchorFile",
    "AnchorFinding",
    "AnchorReading",
    "Anchors",
    "acceptance_details",
    "head_bytes",
    "local_anchor_path",
    "state_anchor_path",
    "worst_finding",
]

log = logging.getLogger(__name__)

_MAGIC = b"memories.anchor\x02"
_SLOT = struct.Struct(">16s16sQ32s32s")  # magic, store id, seq, head, mac
SLOT_SIZE = 512  # one sector: a torn write damages at most the slot being written
ANCHOR_FILE_SIZE = 2 * SLOT_SIZE

LOCAL = "local"
STATE = "state"
_WHERE = {LOCAL: "the anchor beside the store", STATE: "the anchor in the state folder"}
_ADVICE = (
    "if you restored or moved the data folder on purpose, run `memories unlock "
    "--accept-rollback` to accept this state (it is recorded in the audit trail)"
)


def local_anchor_path(store_path: Path, store_id: str) -> Path:
    return store_path.with_name(f"{store_path.name}.{store_id}.anchor")


def state_anchor_path(state_dir: Path, store_id: str) -> Path:
    return state_dir / "anchors" / f"{store_id}.anchor"


def head_bytes(head: str) -> bytes:
    """The 32 raw bytes of a ``sha256:`` chain hash ("" before the first checkpoint)."""
    return bytes.fromhex(head.removeprefix("sha256:")) if head else bytes(32)


@dataclass(frozen=True)
class AnchorReading:
    """What one anchor file says: its newest valid slot, or why there is none."""

    seq: int | None  # None when the file has no valid slot
    head: bytes
    problem: str  # "" when a slot verified; otherwise "missing" or "damaged"
    detail: str  # words for the problem ("is empty", "fails its MAC", ...)
    newest_slot: int  # which slot holds ``seq`` (the next commit overwrites the other)
    torn_slot: bool  # the other slot does not verify (left by an interrupted write)


@dataclass(frozen=True)
class AnchorFinding:
    """One reason an anchor does not vouch for the store as it is."""

    anchor: str  # "local" or "state"
    path: str
    reason: str  # "missing", "damaged", "older" or "diverged"
    anchor_seq: int | None
    message: str


class AnchorFile:
    """One anchor file: read and verified at unlock, advanced after every commit."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self._fd: int | None = None
        self._newest_slot = 0
        self._ready = False  # verified or created since the store was unlocked

    def read(self, keys: StoreKeys) -> AnchorReading:
        """Read and verify both slots; never raises (problems are in the reading)."""
        try:
            with open(self.path, "rb") as file:
                data = file.read(ANCHOR_FILE_SIZE + 1)
        except FileNotFoundError:
            return _problem("missing", "is missing")
        except OSError as exc:
            return _problem("damaged", f"cannot be read ({os_reason(exc)})")
        if not data:
            return _problem("damaged", "is empty")
        if len(data) != ANCHOR_FILE_SIZE:
            return _problem("damaged", "is truncated or not an anchor")
        slots = [_open_slot(keys, data[i * SLOT_SIZE : (i + 1) * SLOT_SIZE]) for i in (0, 1)]
        valid = [(slot[0], slot[1], i) for i, slot in enumerate(slots) if slot is not None]
        if not valid:
            return _problem("damaged", "does not verify (altered, or not this store's anchor)")
        seq, head, index = max(valid)
        other = data[(1 - index) * SLOT_SIZE : (2 - index) * SLOT_SIZE]
        torn = slots[1 - index] is None and any(other)
        return AnchorReading(seq, head, "", "", index, torn)

    def create(self, keys: StoreKeys, seq: int, head: str) -> None:
        """Write a whole new anchor durably (aside, synced, renamed, folder synced).

        Raises ``MemoriesError`` naming the cause when it cannot be written.
        """
        data = _slot(keys, seq, head).ljust(SLOT_SIZE, b"\x00") + bytes(SLOT_SIZE)
        folder = self.path.parent
        temporary = folder / f".{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}"
        self.close()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
            fsync_dir(folder)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise MemoriesError(
                f"cannot write the rollback anchor {self.path}: {os_reason(exc)}"
            ) from exc
        self._newest_slot = 0
        self._ready = True

    def attach(self, reading: AnchorReading) -> None:
        """Remember where the newest slot is, after a successful ``read``."""
        self._newest_slot = reading.newest_slot
        self._ready = True

    def advance(self, keys: StoreKeys, seq: int, head: str) -> None:
        """Overwrite the older slot with ``(seq, head)``, unsynced (see the module docstring).

        Failures are logged, never raised: the commit already holds and an anchor that stays
        behind is safe. An anchor that did not verify at unlock is left alone until it is
        created again (an accepted rollback).
        """
        if not self._ready:
            return
        slot = 1 - self._newest_slot
        try:
            if self._fd is None:
                # No O_CREAT: an anchor is only ever created whole, by ``create``.
                self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
            os.pwrite(self._fd, _slot(keys, seq, head), slot * SLOT_SIZE)
        except OSError as exc:
            log.warning("cannot update %s: %s", _WHERE[self.name], os_reason(exc))
            return
        self._newest_slot = slot

    def close(self) -> None:
        self._ready = False
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class Anchors:
    """The store's two anchors, checked together and written together."""

    def __init__(self, store_path: Path, store_id: str, state_dir: Path) -> None:
        self.files = (
            AnchorFile(LOCAL, local_anchor_path(store_path, store_id)),
            AnchorFile(STATE, state_anchor_path(state_dir, store_id)),
        )

    def check(
        self,
        keys: StoreKeys,
        seq: int,
        head: str,
        chain_hash_at: Callable[[int], str | None],
        *,
        rekeyed: int = 0,
    ) -> tuple[list[AnchorFinding], list[AnchorFile]]:
        """Compare both anchors with the store at ``(seq, head)``.

        ``chain_hash_at(n)`` returns the chain hash of the store's checkpoint ``n`` (None when
        it is absent), so an anchor that is behind can still be matched with this history. An
        anchor older than ``rekeyed`` (the last master-key rotation, which re-sealed the chain
        and so changed every hash) is compared by sequence number only. Returns the findings
        and the anchors with a torn slot. Never raises.
        """
        findings: list[AnchorFinding] = []
        torn: list[AnchorFile] = []
        for anchor in self.files:
            reading = anchor.read(keys)
            finding = _judge(anchor, reading, seq, head, chain_hash_at, rekeyed)
            if finding is not None:
                findings.append(finding)
                continue
            anchor.attach(reading)
            if reading.torn_slot:
                torn.append(anchor)
        return findings, torn

    def create(self, keys: StoreKeys, seq: int, head: str) -> None:
        """Write both anchors whole and durably. Raises ``MemoriesError``."""
        for anchor in self.files:
            anchor.create(keys, seq, head)

    def advance(self, keys: StoreKeys, seq: int, head: str) -> None:
        """After a commit: both anchors to ``(seq, head)``; failures are only logged."""
        for anchor in self.files:
            anchor.advance(keys, seq, head)

    def remove(self) -> None:
        """Delete both files (a store that was never published)."""
        self.close()
        for anchor in self.files:
            with contextlib.suppress(OSError):
                anchor.path.unlink()

    def close(self) -> None:
        for anchor in self.files:
            anchor.close()


def _judge(
    anchor: AnchorFile,
    reading: AnchorReading,
    seq: int,
    head: str,
    chain_hash_at: Callable[[int], str | None],
    rekeyed: int,
) -> AnchorFinding | None:
    where = _WHERE[anchor.name]

    def finding(reason: str, message: str) -> AnchorFinding:
        return AnchorFinding(anchor.name, str(anchor.path), reason, reading.seq, message)

    if reading.seq is None:
        return finding(
            reading.problem,
            f"{where} ({anchor.path}) {reading.detail}, but this store has committed before: "
            f"it may have been replaced by an older copy; refusing to open it; {_ADVICE}",
        )
    if reading.seq > seq:
        return finding(
            "older",
            f"the store file is older than its last recorded commit ({seq} < {reading.seq}, "
            f"per {where}): was it restored from a copy? refusing to open it; {_ADVICE}",
        )
    if reading.seq == seq:
        matches = hmac.compare_digest(reading.head, head_bytes(head))
    elif reading.seq < rekeyed:
        matches = True  # its hash names the chain as sealed before the rotation
    else:
        recorded = chain_hash_at(reading.seq)
        matches = recorded is not None and hmac.compare_digest(reading.head, head_bytes(recorded))
    if not matches:
        return finding(
            "diverged",
            f"the store's history differs from the one {where} recorded at commit "
            f"{reading.seq}: it is another copy of this store; refusing to open it; {_ADVICE}",
        )
    return None


def _problem(problem: str, detail: str) -> AnchorReading:
    return AnchorReading(None, bytes(32), problem, detail, 0, False)


def _slot(keys: StoreKeys, seq: int, head: str) -> bytes:
    raw = head_bytes(head)
    return _SLOT.pack(_MAGIC, keys.store_bytes, seq, raw, keys.anchor_mac(seq, raw))


def _open_slot(keys: StoreKeys, data: bytes) -> tuple[int, bytes] | None:
    magic, store, seq, head, mac = _SLOT.unpack_from(data)
    if magic != _MAGIC or store != keys.store_bytes or any(data[_SLOT.size :]):
        return None
    if not hmac.compare_digest(mac, keys.anchor_mac(seq, head)):
        return None
    return seq, head


_SEVERITY = ("older", "diverged", "damaged", "missing")


def worst_finding(findings: list[AnchorFinding]) -> AnchorFinding:
    """The finding an unlock reports when several anchors disagree with the store."""
    return min(findings, key=lambda f: _SEVERITY.index(f.reason))


def acceptance_details(findings: list[AnchorFinding], store_seq: int) -> dict[str, str | int]:
    """What the audit entry of an accepted rollback records: each anchor's finding and seq."""
    details: dict[str, str | int] = {
        "store_seq": store_seq,
        "reasons": ",".join(sorted({f.reason for f in findings})),
    }
    for finding in findings:
        details[f"{finding.anchor}_anchor_seq"] = (
            -1 if finding.anchor_seq is None else finding.anchor_seq
        )
        details[f"{finding.anchor}_anchor"] = finding.reason
    return details
