"""A folder transport: objects as files in any directory the user already syncs.

That is a Syncthing, Dropbox, iCloud or Nextcloud folder, an NFS mount or a USB stick. Each
object is written to a temporary dot-file in its area and renamed into place after an fsync,
so this process never leaves a partial object under an object's name. Sync clients do not
promise the same (they may show a file while still copying it in), so ``get`` also checks
that a file's bytes hash to its name and treats anything else as not there yet. Listings
ignore every name that is not an object name: temporary files, sync clients' conflict copies
(``… (conflicted copy).``), their own dot-files.

Layout::

    ROOT/objects/<sha256 hex>        sealed objects
    ROOT/descriptors/<sha256 hex>    signed descriptors
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from memories.fsutil import fsync_dir
from memories.sync.errors import ObjectMissing, TransportError
from memories.sync.transports.base import (
    AREAS,
    MAX_OBJECT_BYTES,
    check_name,
    content_matches,
    is_name,
)

__all__ = ["FolderTransport"]


class FolderTransport:
    """Objects as files under ``root`` (created on first put)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def description(self) -> str:
        return f"folder {self.root}"

    def put(self, name: str, data: bytes) -> None:
        """Write ``data`` under ``name`` durably (temp file, fsync, rename, fsync of the folder).

        A complete object already there is left alone. Raises ``UsageError`` for a bad name,
        ``TransportError`` when the folder cannot be written (missing mount, full, read-only).
        """
        check_name(name)
        if len(data) > MAX_OBJECT_BYTES:
            raise TransportError("an object is too large to store")
        target = self.root / name
        try:
            if self._complete(target, name):
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.parent / f".tmp-{secrets.token_hex(8)}"
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                # Replacing is safe: whatever sat under this name did not hash to it.
                os.replace(temp, target)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    temp.unlink()
            fsync_dir(target.parent)
        except OSError as exc:
            raise TransportError(
                f"cannot write to {self.description} ({exc.strerror or 'I/O error'})"
            ) from exc

    def _complete(self, target: Path, name: str) -> bool:
        try:
            return content_matches(name, self._read(target))
        except (FileNotFoundError, ObjectMissing):
            return False

    def _read(self, target: Path) -> bytes:
        with open(target, "rb") as handle:
            # Asking for the bound at once makes the reader allocate it for every small
            # object; ask for the file's size (and the rest, should it have grown since).
            size = min(os.fstat(handle.fileno()).st_size, MAX_OBJECT_BYTES)
            data = handle.read(size + 1)
            if len(data) > size:
                data += handle.read(MAX_OBJECT_BYTES + 1 - len(data))
        if len(data) > MAX_OBJECT_BYTES:
            raise ObjectMissing("an object in the folder is too large; it is ignored")
        return data

    def get(self, name: str) -> bytes:
        """The complete object under ``name``.

        Raises ``ObjectMissing`` when the file is absent or its bytes do not (yet) hash to its
        name (still being copied in by a sync client, truncated, tampered with),
        ``TransportError`` when the folder cannot be read, ``UsageError`` for a bad name.
        """
        check_name(name)
        try:
            data = self._read(self.root / name)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ObjectMissing(f"{self.description} does not hold that object yet") from exc
        except OSError as exc:
            raise TransportError(
                f"cannot read from {self.description} ({exc.strerror or 'I/O error'})"
            ) from exc
        if not content_matches(name, data):
            raise ObjectMissing(f"an object in {self.description} is incomplete or damaged")
        return data

    def list(self) -> list[str]:
        """The object names in the folder now (an absent folder holds none).

        Raises ``TransportError`` when the folder cannot be read.
        """
        names: list[str] = []
        for area in AREAS:
            try:
                with os.scandir(self.root / area) as entries:
                    names.extend(
                        f"{area}/{entry.name}"
                        for entry in entries
                        if not entry.name.startswith(".") and entry.is_file(follow_symlinks=False)
                    )
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise TransportError(
                    f"cannot list {self.description} ({exc.strerror or 'I/O error'})"
                ) from exc
        return sorted(name for name in names if is_name(name))
