"""The backup file's envelope: an independent passphrase, Argon2id, one data key, sealed chunks.

Layout (docs/FORMATS.md, "memories backup file")::

    header line   canonical JSON, then one "\\n"
    chunks        the sealed payload chunks, back to back (sizes follow from the header)

The header is ``{"t": "memories.backup", "v": 1, "id", "created_at", "kdf", "key",
"chunk_size", "chunks", "size"}``. ``kdf`` holds the Argon2id parameters and salt of the
passphrase; ``key`` is a random data key wrapped under the passphrase key with purpose
``backup.key`` (context: the backup id). Chunk ``i`` of ``n`` is sealed under the data key with
``associated_data("backup.payload", asset=<backup id>, revision=<header hash>, index=i,
count=n)``, where the header hash is ``tagged_hash("memories.backup", header line bytes)``: so
every header field is authenticated, and truncating, reordering or splicing chunks fails.

The passphrase is independent of the store password: the backup opens without the store (and
after the store password is forgotten), and knowing the store password opens no backup.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memories.crypto import (
    CHUNK_SIZE,
    KdfParams,
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    derive_key,
    new_key,
    open_chunks,
    seal_chunks,
    tagged_hash,
    unwrap_key,
    wipe,
    wrap_key,
)
from memories.errors import (
    ConflictError,
    DeniedError,
    IntegrityError,
    MemoriesError,
    NotFoundError,
    UsageError,
)
from memories.fsutil import fsync_dir

__all__ = [
    "BACKUP_TAG",
    "BACKUP_VERSION",
    "Envelope",
    "open_envelope",
    "read_file",
    "seal_envelope",
    "write_atomically",
]

BACKUP_TAG = "memories.backup"
BACKUP_VERSION = 1
KEY_PURPOSE = "backup.key"
PAYLOAD_PURPOSE = "backup.payload"
#: Sealing overhead per chunk: marker, nonce and tag (see memories.crypto.aead).
_OVERHEAD = 1 + 12 + 16
_MAX_HEADER = 4096
_MIN_CHUNK, _MAX_CHUNK = 4096, 16 * 1024 * 1024
_HEADER_KEYS = frozenset(
    {"t", "v", "id", "created_at", "kdf", "key", "chunk_size", "chunks", "size"}
)
_DAMAGED = "the backup file is damaged or not a memories backup"
_TRUNCATED = "the backup file is truncated or has bytes added; it cannot be used"
_WRONG = "the backup passphrase is not correct (or the file's header was altered); nothing was read"
_CONTENT = "the backup file is damaged: its content does not authenticate; it cannot be used"


@dataclass(frozen=True)
class Envelope:
    """An opened backup file: its header fields and the decrypted payload."""

    backup_id: str
    created_at: str
    kdf: KdfParams
    payload: bytes
    size: int  # the file's size in bytes

    def __repr__(self) -> str:
        return f"Envelope(id={self.backup_id[:8]}, payload=<{len(self.payload)} bytes>)"


def _chunk_lengths(size: int, chunk_size: int) -> list[int]:
    count = max(1, -(-size // chunk_size))
    lengths = [chunk_size] * (count - 1)
    lengths.append(size - chunk_size * (count - 1))
    return lengths


def seal_envelope(
    payload: bytes,
    passphrase: str,
    kdf: KdfParams,
    *,
    backup_id: str,
    created_at: str,
) -> bytes:
    """The whole backup file for ``payload`` under ``passphrase``.

    Raises ``UsageError`` for an empty passphrase, ``MemoriesError`` when the machine lacks the
    memory Argon2id needs.
    """
    kek = derive_key(passphrase, kdf)
    data_key = new_key()
    try:
        wrapped = wrap_key(kek, data_key, purpose=KEY_PURPOSE, backup=backup_id)
        lengths = _chunk_lengths(len(payload), CHUNK_SIZE)
        header = canonical_bytes(
            {
                "t": BACKUP_TAG,
                "v": BACKUP_VERSION,
                "id": backup_id,
                "created_at": created_at,
                "kdf": kdf.to_dict(),
                "key": b64u_encode(wrapped),
                "chunk_size": CHUNK_SIZE,
                "chunks": len(lengths),
                "size": len(payload),
            }
        )
        chunks = seal_chunks(
            data_key,
            payload,
            purpose=PAYLOAD_PURPOSE,
            asset_id=backup_id,
            revision=tagged_hash(BACKUP_TAG, header),
        )
    finally:
        wipe(kek, data_key)
    return b"".join([header, b"\n", *chunks])


def _header(data: bytes) -> tuple[bytes, dict[str, object]]:
    end = data.find(b"\n", 0, _MAX_HEADER)
    if end < 0:
        raise IntegrityError(_DAMAGED)
    line = data[:end]
    try:
        doc = json.loads(line)
    except ValueError:
        raise IntegrityError(_DAMAGED) from None
    if not isinstance(doc, dict) or doc.get("t") != BACKUP_TAG:
        raise IntegrityError(_DAMAGED)
    version = doc.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version > BACKUP_VERSION:
        raise UsageError(
            f"this backup has format version {version}; this release reads version "
            f"{BACKUP_VERSION}: use a newer memories"
        )
    if version != BACKUP_VERSION or set(doc) != _HEADER_KEYS:
        raise IntegrityError(_DAMAGED)
    # One spelling only: the header hash binds these exact bytes into every chunk.
    try:
        canonical = canonical_bytes(doc)
    except UsageError:
        raise IntegrityError(_DAMAGED) from None
    if canonical != line:
        raise IntegrityError(_DAMAGED)
    return line, doc


def _int(value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise IntegrityError(_DAMAGED)
    return value


def open_envelope(data: bytes, passphrase: str) -> Envelope:
    """Check and decrypt a backup file's bytes.

    Raises:
        IntegrityError: the file is not a backup, is truncated or extended, or a chunk does
            not authenticate (each with its own message; nothing is quoted).
        DeniedError: the passphrase does not open the data key (or the header was altered).
        UsageError: the file is from a newer format version, or the passphrase is empty.
        MemoriesError: the machine lacks the memory the stored Argon2id parameters need.
    """
    line, doc = _header(data)
    kdf_doc = doc["kdf"]
    if not isinstance(kdf_doc, dict):
        raise IntegrityError(_DAMAGED)
    kdf = KdfParams.from_dict(kdf_doc)  # refuses parameters below the floor or absurd ones
    backup_id, created_at, key_text = doc["id"], doc["created_at"], doc["key"]
    if not all(isinstance(v, str) and v for v in (backup_id, created_at, key_text)):
        raise IntegrityError(_DAMAGED)
    assert isinstance(backup_id, str) and isinstance(created_at, str) and isinstance(key_text, str)
    chunk_size = _int(doc["chunk_size"], _MIN_CHUNK, _MAX_CHUNK)
    size = _int(doc["size"], 0, 2**53 - 1)
    lengths = _chunk_lengths(size, chunk_size)
    if _int(doc["chunks"], 1, 2**53 - 1) != len(lengths):
        raise IntegrityError(_DAMAGED)
    body = len(line) + 1
    if len(data) != body + size + _OVERHEAD * len(lengths):
        raise IntegrityError(_TRUNCATED)
    wrapped = b64u_decode(key_text)
    kek = derive_key(passphrase, kdf)
    try:
        data_key = unwrap_key(kek, wrapped, purpose=KEY_PURPOSE, backup=backup_id)
    except IntegrityError:
        raise DeniedError(_WRONG) from None
    finally:
        wipe(kek)
    chunks = []
    at = body
    for length in lengths:
        chunks.append(data[at : at + length + _OVERHEAD])
        at += length + _OVERHEAD
    try:
        payload = open_chunks(
            data_key,
            chunks,
            purpose=PAYLOAD_PURPOSE,
            asset_id=backup_id,
            revision=tagged_hash(BACKUP_TAG, line),
        )
    except IntegrityError:
        raise IntegrityError(_CONTENT) from None
    finally:
        wipe(data_key)
    return Envelope(backup_id, created_at, kdf, payload, len(data))


def read_file(path: Path) -> bytes:
    """The bytes of the backup file at ``path``.

    Raises ``NotFoundError`` when it does not exist, ``UsageError`` for a folder or a relative
    path, ``MemoriesError`` naming the cause when it cannot be read.
    """
    _require_absolute(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"there is no backup file at {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder, not a backup file") from None
    except OSError as exc:
        raise MemoriesError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from exc


def _require_absolute(path: Path) -> None:
    if not path.is_absolute():
        raise UsageError("the backup path must be absolute")


def write_atomically(
    path: Path, data: bytes, *, check: Callable[[Path], None], overwrite: bool = False
) -> None:
    """Publish ``data`` at ``path`` whole or not at all, readable by the owner only.

    The bytes go to a new temporary file (mode 0600) in the same folder, are synced, and
    ``check`` re-reads that file from disk before it is renamed into place and the folder is
    synced; a file that fails ``check`` is removed and never replaces anything. Without
    ``overwrite`` an existing ``path`` is refused, also when one appears meanwhile.

    Raises:
        ConflictError: ``path`` exists and ``overwrite`` is false.
        NotFoundError: the folder does not exist.
        UsageError: ``path`` is relative or a folder.
        MemoriesError: the file cannot be written (its cause named), or what ``check`` raises.
    """
    _require_absolute(path)
    folder = path.parent
    if not folder.is_dir():
        raise NotFoundError(f"the folder {folder} does not exist")
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file name")
    if path.exists() and not overwrite:
        raise ConflictError(f"{path} exists already; it was left untouched (--force replaces it)")
    temp = folder / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise MemoriesError(
                f"cannot write the backup in {folder}: {exc.strerror or type(exc).__name__}"
            ) from exc
        check(temp)
        try:
            if overwrite:
                os.replace(temp, path)
            else:
                try:
                    os.link(temp, path)  # fails when the name exists: never clobbers
                except FileExistsError:
                    raise ConflictError(
                        f"{path} appeared meanwhile; it was left untouched"
                    ) from None
            fsync_dir(folder)
        except OSError as exc:
            raise MemoriesError(
                f"cannot publish the backup at {path}: {exc.strerror or type(exc).__name__}"
            ) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
