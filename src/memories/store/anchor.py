"""The rollback anchor: a small file beside the store that remembers the newest commit.

A store file replaced by an older copy of itself is internally consistent, so nothing inside it
can tell. After every commit the store writes ``(seq, checkpoint hash, MAC)`` here; at unlock an
anchor that is ahead of the file, or at the same sequence with another history, is refused.

It is written after the commit and not synced: after a crash or power loss it can only be
behind, which weakens the check for one commit but never refuses a good store. Whoever can delete
the anchor as well as replace the store defeats it; it guards against restored backups and
copies, not against an attacker with full control of the disk.
"""

from __future__ import annotations

import hmac
import logging
import os
import struct
from pathlib import Path

from memories.errors import IntegrityError
from memories.store.records import StoreKeys

__all__ = ["Anchor", "anchor_path_for"]

log = logging.getLogger(__name__)

_LAYOUT = struct.Struct(">Q32s32s")


def anchor_path_for(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".anchor")


class Anchor:
    def __init__(self, store_path: Path) -> None:
        self.path = anchor_path_for(store_path)
        self._fd: int | None = None

    def check(self, keys: StoreKeys, seq: int, head: str) -> None:
        """Raise ``IntegrityError`` if the store at ``(seq, head)`` is older than the anchor."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("cannot read the rollback anchor: %s", exc.strerror)
            return
        if not data:  # created, then the writer died before its first record
            return
        if len(data) != _LAYOUT.size:
            log.warning("ignoring a malformed rollback anchor")
            return
        anchor_seq, anchor_head, mac = _LAYOUT.unpack(data)
        if not hmac.compare_digest(mac, keys.anchor_mac(anchor_seq, anchor_head)):
            # Another store's anchor (the store was re-created) or a damaged file.
            log.warning("ignoring a rollback anchor that belongs to another store")
            return
        if anchor_seq > seq or (anchor_seq == seq and anchor_head != _head_bytes(head)):
            raise IntegrityError(
                "the store file is older than its last recorded commit (was it restored from a "
                "copy?); refusing to open it"
            )

    def write(self, keys: StoreKeys, seq: int, head: str) -> None:
        """Record ``(seq, head)``; failures are logged, never raised (the commit already holds)."""
        head_bytes = _head_bytes(head)
        record = _LAYOUT.pack(seq, head_bytes, keys.anchor_mac(seq, head_bytes))
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            os.pwrite(self._fd, record, 0)
        except OSError as exc:
            log.warning("cannot update the rollback anchor: %s", exc.strerror)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _head_bytes(head: str) -> bytes:
    return bytes.fromhex(head.removeprefix("sha256:")) if head else bytes(32)
