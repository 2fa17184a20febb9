"""Files that travel in chunks: uploads being stored and downloads being read.

One IPC frame carries at most 16 MiB, so a file up to ``max_file_mib`` (64 MiB by default)
moves in bounded chunks. An *upload* is opened with the file's declared size and receives its
bytes in order; each chunk is sealed and written to a staging area in the store as it arrives
(:class:`memories.vault.files.FileUpload`), and finishing commits the file in one transaction.
A *download* holds an opener over one stored file (:class:`memories.vault.filebody.FileOpener`),
opened by an audited request, and decrypts only the chunks each slice needs. Either way the
daemon holds a few 256 KiB chunks per transfer, not the file (a file stored before streaming,
content version 1, is still decoded whole when downloaded).

Transfers live under the service lock and are bounded:

- a caller namespace may hold :data:`MAX_PER_CALLER` open transfers, the service
  :data:`MAX_TRANSFERS`, and all of them together hold at most :data:`BUDGET_FILES` times
  ``max_file_bytes`` of plaintext (which only version-1 downloads come near);
- a transfer untouched for :data:`IDLE_SECONDS` is dropped (checked whenever a transfer is
  opened or used), and locking drops them all. A dropped upload's staged chunks are deleted at
  once, or, when the store is already locked, at its next unlock.

A transfer is addressed by a random id and belongs to the caller that opened it: to anyone else
it does not exist, so a guessed or leaked id reveals nothing.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from memories.crypto import CHUNK_SIZE
from memories.errors import BusyError, ConflictError, IntegrityError, NotFoundError, UsageError
from memories.service.access import Caller
from memories.service.intents import Ticket
from memories.service.requests.base import RequestModel
from memories.vault import FileOpener, FileUpload
from memories.views.format import format_limit, format_size

__all__ = [
    "BUDGET_FILES",
    "IDLE_SECONDS",
    "MAX_PER_CALLER",
    "MAX_TRANSFERS",
    "Download",
    "Transfers",
    "Upload",
]

#: Open transfers one caller namespace may hold at once.
MAX_PER_CALLER: Final = 4
#: Open transfers the whole service holds at once.
MAX_TRANSFERS: Final = 16
#: All open transfers together hold at most this many times ``max_file_bytes``.
BUDGET_FILES: Final = 4
#: A transfer nobody touched for this long is dropped (the IPC idle timeout).
IDLE_SECONDS: Final = 300.0
#: Plaintext an upload holds between chunks: the chunk being filled and chunk 0.
_UPLOAD_HELD: Final = 2 * CHUNK_SIZE

_GONE = (
    "that file {what} is not open (finished, cancelled, expired or dropped at lock); start again"
)


@dataclass(eq=False, repr=False)
class Upload:
    """An upload being stored: the vault's upload and the request that opened it."""

    id: str
    caller: Caller
    #: The validated start request, authorized again before the file is stored.
    start: RequestModel
    file: FileUpload
    touched: float

    @property
    def size(self) -> int:
        return self.file.size

    @property
    def received(self) -> int:
        return self.file.received

    @property
    def held(self) -> int:
        return _UPLOAD_HELD

    def append(self, offset: int, data: bytes) -> int:
        """Seal and stage the chunk that starts at ``offset``; returns the bytes received.

        Raises:
            ConflictError: ``offset`` is not where the previous chunk ended.
            UsageError: the chunk is empty or would go past the declared size.
            MemoriesError: the store cannot be written (the chunk was not taken).
        """
        if offset != self.received:
            raise ConflictError(
                f"the upload expects the chunk at offset {self.received}; send chunks in order"
            )
        if not data:
            raise UsageError("an upload chunk must not be empty")
        if self.received + len(data) > self.size:
            raise UsageError(
                f"the chunk goes past the declared size of {self.size} bytes; "
                "declare the real size when starting the upload"
            )
        return self.file.write(data)

    def check(self, digest: str) -> None:
        """Check that every byte has arrived and that they match ``digest`` (``sha256:<hex>``).

        Raises:
            UsageError: fewer bytes than declared have arrived.
            IntegrityError: the bytes do not match ``digest``.
        """
        if self.received != self.size:
            raise UsageError(
                f"the upload has {self.received} of {self.size} bytes; send the rest first"
            )
        if not hmac.compare_digest(self.file.sealer.sha256(), digest):
            raise IntegrityError(
                "the uploaded bytes do not match their sha256 digest; nothing was stored"
            )

    def close(self) -> None:
        self.file.close()

    def __repr__(self) -> str:
        return f"Upload(size={self.size}, received={self.received})"


@dataclass(eq=False, repr=False)
class Download:
    """An opener over one stored file, handed out in slices after its read intent is durable."""

    id: str
    caller: Caller
    opener: FileOpener
    #: The read intent of the request that opened it (None until it is filed); no slice
    #: leaves before it is durable.
    ticket: Ticket | None
    touched: float

    @property
    def size(self) -> int:
        return self.opener.size

    @property
    def held(self) -> int:
        return self.opener.held

    @property
    def denied(self) -> bool:
        """Whether its read intent failed (the opening request was denied)."""
        return self.ticket is not None and self.ticket.settled and self.ticket.error is not None

    def slice(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (fewer at the end).

        Raises:
            UsageError: ``offset`` lies beyond the end of the file.
            NotFoundError: the read intent is not durable (never the case for a caller that
                received the download's id).
            IntegrityError: the stored file is damaged (opaque).
        """
        ticket = self.ticket
        if ticket is None or not ticket.settled or ticket.error is not None:
            raise NotFoundError(_GONE.format(what="download"))
        if offset > self.size:
            raise UsageError(f"the offset lies beyond the end of the file ({self.size} bytes)")
        return self.opener.read(offset, length)

    def close(self) -> None:
        self.opener.close()

    def __repr__(self) -> str:
        return f"Download(size={self.size})"


_T = TypeVar("_T", Upload, Download)


class Transfers:
    """The open uploads and downloads of one service. Call only under the service lock."""

    def __init__(self, clock: Callable[[], float], *, max_file_bytes: int) -> None:
        self._clock = clock
        self.max_file_bytes = max_file_bytes
        self._open: dict[str, Upload | Download] = {}

    def __len__(self) -> int:
        return len(self._open)

    @property
    def held_bytes(self) -> int:
        """Plaintext bytes every open transfer may hold between requests."""
        return sum(t.held for t in self._open.values())

    def open_upload(
        self, caller: Caller, start: RequestModel, size: int, begin: Callable[[], FileUpload]
    ) -> Upload:
        """Admit an upload of ``size`` bytes for ``caller``, then open it with ``begin()``.

        Raises:
            UsageError: ``size`` is larger than ``max_file_bytes`` (or negative).
            BusyError: the caller or the service holds as many transfers as allowed.
            Whatever ``begin`` raises.
        """
        if size < 0:
            raise UsageError("the file size must not be negative")
        if size > self.max_file_bytes:
            raise UsageError(
                f"the file is {format_size(size)}; the limit is "
                f"{format_limit(self.max_file_bytes)} (max_file_mib)"
            )
        self._admit(caller, _UPLOAD_HELD)
        upload = Upload(
            id=_new_id(), caller=caller, start=start, file=begin(), touched=self._clock()
        )
        self._open[upload.id] = upload
        return upload

    def open_download(self, caller: Caller, opener: FileOpener, ticket: Ticket | None) -> Download:
        """Open a download over ``opener`` for ``caller``, released once ``ticket`` is durable.
        On refusal the opener is closed.

        Raises:
            BusyError: the caller or the service holds as many transfers as allowed.
        """
        try:
            self._admit(caller, opener.held)
        except BusyError:
            opener.close()
            raise
        download = Download(
            id=_new_id(), caller=caller, opener=opener, ticket=ticket, touched=self._clock()
        )
        self._open[download.id] = download
        return download

    def upload(self, caller: Caller, transfer_id: str) -> Upload:
        """The caller's open upload ``transfer_id``. Raises ``NotFoundError`` otherwise."""
        return self._get(caller, transfer_id, Upload, "upload")

    def download(self, caller: Caller, transfer_id: str) -> Download:
        """The caller's open download ``transfer_id``. Raises ``NotFoundError`` otherwise."""
        return self._get(caller, transfer_id, Download, "download")

    def close(self, caller: Caller, transfer_id: str) -> bool:
        """Drop the caller's transfer ``transfer_id``; returns whether one was open.

        Raises ``MemoriesError`` when an upload's staged chunks cannot be deleted (they go at
        the next unlock); the transfer is dropped all the same.
        """
        self.prune()
        found = self._open.get(transfer_id)
        if found is None or found.caller != caller:
            return False
        del self._open[transfer_id]
        found.close()
        return True

    def clear(self) -> None:
        """Drop every transfer (the store locked or closed)."""
        dropped = list(self._open.values())
        self._open.clear()
        _close_all(dropped)

    def prune(self) -> None:
        """Drop transfers idle for :data:`IDLE_SECONDS` and downloads whose intent failed."""
        now = self._clock()
        dropped = []
        for key, transfer in list(self._open.items()):
            stale = now - transfer.touched > IDLE_SECONDS
            if stale or (isinstance(transfer, Download) and transfer.denied):
                del self._open[key]
                dropped.append(transfer)
        _close_all(dropped)

    def _admit(self, caller: Caller, held: int) -> None:
        self.prune()
        if sum(1 for t in self._open.values() if t.caller == caller) >= MAX_PER_CALLER:
            raise BusyError(
                f"{MAX_PER_CALLER} file transfers are already open for you; "
                "finish or cancel one first"
            )
        # Room for every slot to hold an upload, whatever the file limit.
        budget = max(BUDGET_FILES * self.max_file_bytes, MAX_TRANSFERS * _UPLOAD_HELD)
        if len(self._open) >= MAX_TRANSFERS or self.held_bytes + held > budget:
            raise BusyError("the daemon is busy with other file transfers; try again shortly")

    def _get(self, caller: Caller, transfer_id: str, kind: type[_T], what: str) -> _T:
        self.prune()
        found = self._open.get(transfer_id)
        # Another caller's transfer is reported exactly like a missing one.
        if not isinstance(found, kind) or found.caller != caller:
            raise NotFoundError(_GONE.format(what=what))
        found.touched = self._clock()
        return found


def _close_all(transfers: list[Upload | Download]) -> None:
    """Close each one; the first failure is raised after every one was tried."""
    failure: BaseException | None = None
    for transfer in transfers:
        try:
            transfer.close()
        except BaseException as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


def _new_id() -> str:
    return secrets.token_urlsafe(18)
