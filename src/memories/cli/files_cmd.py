"""file put|get and credential put: binary files and secrets in the vault.

Files travel in chunks of at most 4 MiB (``file_upload_*`` / ``file_download_*``), so the
command line never holds a whole file: an upload reads the source chunk by chunk, hashing as
it goes, and a download writes into a temporary file beside the destination, checks the
digest the daemon announced, then renames it into place. Files larger than a few chunks show a
progress bar on a terminal's standard error.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mimetypes
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import click

from memories.cli import cli
from memories.cli.common import (
    call,
    json_option,
    read_stdin_text,
    reports_errors,
    settings,
    short_ref,
    vault_option,
)
from memories.cli.render import clean_line, console, emit_json, error_console
from memories.errors import ConflictError, IntegrityError, MemoriesError, UsageError

if TYPE_CHECKING:
    from memories.service.requests import RequestModel
    from memories.service.requests.files import FileUploadStartRequest

__all__ = ["publish_file"]

#: Files at least this large show a progress bar (on a terminal, without --json).
PROGRESS_BYTES: Final = 8 * 1024 * 1024
# Storing or opening a file makes the daemon encrypt or decrypt all of it in one request:
# allow the normal 30 seconds plus one per MiB.
_BASE_SECONDS: Final = 30.0
_SECONDS_PER_MIB: Final = 1.0
# Directory operations that mean "this file system cannot make hard links".
_NO_LINKS: Final = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV})


def _size(size: int) -> str:
    from memories.views.format import format_size

    return format_size(size)


def _limit(size: int) -> str:
    from memories.views.format import format_limit

    return format_limit(size)


def _slow_call(request: RequestModel, size: int) -> dict[str, Any]:
    """``call`` with a timeout that grows with the size of the file the daemon handles."""
    return call(request, timeout=_BASE_SECONDS + _SECONDS_PER_MIB * size / (1024 * 1024))


class _Progress:
    """A transfer's progress bar on standard error, or nothing (small files, no terminal)."""

    def __init__(self, label: str, total: int, *, enabled: bool) -> None:
        self._label = label
        self._total = total
        self._enabled = enabled and total >= PROGRESS_BYTES and error_console.is_terminal
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self._enabled:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._bar = Progress(
                # The label holds a stored file name: plain text, never markup.
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=error_console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=self._total)
        return self

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, count)

    def note(self, label: str) -> None:
        """Replace the label (the slow last step: the daemon encrypting or storing)."""
        if self._bar is not None:
            self._bar.update(self._task, description=label)

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()


@cli.group("file")
def file_group() -> None:
    """Store files (certificates, configs, images) encrypted in the vault.

    \b
    Example:
      memories file put ./id_ed25519.pub --tag ssh
      memories file get 1a2b3c4d -o ./restored.pub
    """


# -- put ------------------------------------------------------------------------------------


@file_group.command("put")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, readable=True, path_type=Path))
@click.option("--title", help="The title [default: the file name].")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option("--private", is_flag=True, help="Only show it after `memories sudo`.")
@click.option("--media-type", help="The media type [default: guessed from the name].")
@vault_option
@json_option
@reports_errors
def file_put(
    path: Path,
    title: str | None,
    tags: tuple[str, ...],
    private: bool,
    media_type: str | None,
    vault: str | None,
    as_json: bool,
) -> None:
    """Store the file at PATH and print its short id.

    Files up to max_file_mib (64 MiB unless configured) are accepted; they are sent in
    chunks, with a progress bar for large files.

    \b
    Examples:
      memories file put ./nginx.conf --tag infra
      memories file put scan.pdf --title "Lease contract" --private
    """
    from memories.service.requests.files import FileUploadStartRequest

    limit = settings().max_file_bytes
    try:
        source = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    with source:
        size = _source_size(source, path)
        if size > limit:
            # Refused here, before the daemon is even asked: nothing is sent.
            raise UsageError(
                f"the file is {_size(size)}; files up to {_limit(limit)} fit (max_file_mib)"
            )
        start = FileUploadStartRequest(
            op="file_upload_start",
            vault=vault,
            name=path.name,
            media_type=media_type
            or mimetypes.guess_type(path.name)[0]
            or "application/octet-stream",
            size=size,
            title=title,
            tags=list(tags) if tags else None,
            private=private,
        )
        with _Progress(clean_line(path.name, 40), size, enabled=not as_json) as progress:
            response = _upload(source, path, start, progress)
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))


def _source_size(source: IO[bytes], path: Path) -> int:
    try:
        return os.fstat(source.fileno()).st_size
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None


def _upload(
    source: IO[bytes], path: Path, start: FileUploadStartRequest, progress: _Progress
) -> dict[str, Any]:
    """Send ``source`` (``start.size`` bytes) chunk by chunk and store it; returns Saved.

    Raises:
        UsageError: the file cannot be read, or changed size while it was read.
        MemoriesError: what the daemon reported. An unfinished upload is cancelled.
    """
    from memories.service.requests.files import (
        CHUNK_BYTES,
        FileUploadChunkRequest,
        FileUploadFinishRequest,
    )
    from memories.views.encoding import b64u_encode

    size = start.size
    opened = call(start)
    upload = str(opened["upload"])
    chunk = max(1, min(int(opened.get("chunk_bytes", CHUNK_BYTES)), CHUNK_BYTES))
    digest = hashlib.sha256()
    finished = False
    try:
        offset = 0
        while offset < size:
            data = _read(source, path, min(chunk, size - offset))
            if not data:
                raise UsageError(f"{path} shrank while it was read; nothing was stored")
            digest.update(data)
            call(
                FileUploadChunkRequest(
                    op="file_upload_chunk", upload=upload, offset=offset, data=b64u_encode(data)
                )
            )
            offset += len(data)
            progress.advance(len(data))
        if _read(source, path, 1):
            raise UsageError(f"{path} grew while it was read; nothing was stored")
        progress.note("storing")
        finish = FileUploadFinishRequest(
            op="file_upload_finish", upload=upload, sha256="sha256:" + digest.hexdigest()
        )
        saved = _slow_call(finish, size)
        finished = True
        return saved
    finally:
        if not finished:
            _cancel(upload=upload)


def _read(source: IO[bytes], path: Path, count: int) -> bytes:
    try:
        return source.read(count)
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None


def _cancel(*, upload: str | None = None, download: str | None = None) -> None:
    """Ask the daemon to drop an unfinished transfer. Best effort: it expires anyway."""
    from memories.service.requests.files import (
        FileDownloadCancelRequest,
        FileUploadCancelRequest,
    )

    request: RequestModel
    if upload is not None:
        request = FileUploadCancelRequest(op="file_upload_cancel", upload=upload)
    elif download is not None:
        request = FileDownloadCancelRequest(op="file_download_cancel", download=download)
    else:
        return
    with contextlib.suppress(MemoriesError):
        call(request)


# -- get ------------------------------------------------------------------------------------


@file_group.command("get")
@click.argument("ref")
@click.option(
    "-o",
    "--output",
    help="Where to write the file; - writes to standard output [default: its stored name "
    "in the current folder]. A folder keeps the stored name.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@json_option
@reports_errors
def file_get(ref: str, output: str | None, force: bool, as_json: bool) -> None:
    """Save a stored file's payload.

    Refuses to overwrite an existing file unless --force is given. The file is written beside
    its destination under a temporary name, checked against the stored digest and then renamed
    into place, so the destination never holds a partial file. New files are readable by you
    only.

    \b
    Examples:
      memories file get 1a2b3c4d                   # writes ./<stored name>
      memories file get 1a2b3c4d -o ~/restored.conf --force
      memories file get 1a2b3c4d -o - | sha256sum
    """
    from memories.service.requests.files import FileDownloadStartRequest

    if output == "-" and as_json:
        raise UsageError(
            "-o - writes the file to standard output; it cannot be combined with --json"
        )
    opened = _slow_call(
        FileDownloadStartRequest(op="file_download_start", ref=ref), settings().max_file_bytes
    )
    download = _Download(opened)
    try:
        with _Progress(clean_line(download.name, 40), download.size, enabled=not as_json) as bar:
            if output == "-":
                download.into(sys.stdout.buffer, bar)
                sys.stdout.buffer.flush()
                return
            destination = _destination(output, download.name)
            if not force and os.path.lexists(destination):
                raise ConflictError(f"{destination} exists; pass --force to overwrite it")
            publish_file(destination, lambda handle: download.into(handle, bar), force=force)
    finally:
        download.cancel_unless_done()
    if as_json:
        emit_json(
            {
                "name": download.name,
                "media_type": opened.get("media_type"),
                "size": download.size,
                "path": str(destination),
            }
        )
        return
    console.print(f"wrote {_size(download.size)} to {clean_line(str(destination), 300)}")


class _Download:
    """An open download: fetches its chunks in order and checks the announced digest."""

    def __init__(self, opened: dict[str, Any]) -> None:
        self.id = str(opened["download"])
        self.name = str(opened.get("name") or "")
        self.size = int(opened["size"])
        self.digest = str(opened["sha256"])
        self.chunk = int(opened.get("chunk_bytes") or 0)
        self.done = False

    def into(self, sink: IO[bytes], progress: _Progress) -> None:
        """Write every byte to ``sink``.

        Raises:
            IntegrityError: the bytes do not add up to the announced size and digest.
            MemoriesError: what the daemon reported.
        """
        from memories.service.requests.files import CHUNK_BYTES, FileDownloadChunkRequest
        from memories.views.encoding import b64u_decode

        length = max(1, min(self.chunk or CHUNK_BYTES, CHUNK_BYTES))
        digest = hashlib.sha256()
        offset = 0
        while not self.done:
            answer = call(
                FileDownloadChunkRequest(
                    op="file_download_chunk", download=self.id, offset=offset, length=length
                )
            )
            data = b64u_decode(str(answer.get("data", "")))
            self.done = bool(answer.get("done"))
            if offset + len(data) > self.size or (not data and not self.done):
                raise IntegrityError(_MISMATCH)
            digest.update(data)
            sink.write(data)
            offset += len(data)
            progress.advance(len(data))
        if offset != self.size or "sha256:" + digest.hexdigest() != self.digest:
            raise IntegrityError(_MISMATCH)

    def cancel_unless_done(self) -> None:
        if not self.done:
            _cancel(download=self.id)


_MISMATCH = "the bytes received do not match the stored file's size and digest; try again"


def _destination(output: str | None, stored_name: str) -> Path:
    safe = Path(stored_name).name
    if output is None or Path(output).is_dir():
        if safe in ("", ".", "..") or safe != stored_name:
            raise UsageError("the stored file name cannot be used here; give -o PATH")
        return Path(output or ".") / safe
    return Path(output)


def publish_file(path: Path, write: Callable[[IO[bytes]], None], *, force: bool) -> None:
    """Create ``path`` (mode 0600) from what ``write`` writes into a file handle.

    The content goes to a temporary file in the same folder, is synced, then takes the name
    at once: with ``force`` it replaces an existing file, without it an existing file is never
    touched (a hard link publishes without clobbering; where links are not possible the name
    is checked just before the rename). On any failure, an interrupt included, the temporary
    file is removed and ``path`` is as it was.

    Raises:
        ConflictError: ``path`` exists and ``force`` is false.
        MemoriesError: the file cannot be written.
        Whatever ``write`` raises.
    """
    folder = path.parent
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _write_error(path, exc) from None
    published = False
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if force:
            os.replace(temporary, path)
        else:
            _link_new(temporary, path)
        published = True
        _sync_folder(folder)
    except OSError as exc:
        raise _write_error(path, exc) from None
    finally:
        if not published or not force:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _link_new(temporary: str, path: Path) -> None:
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise ConflictError(f"{path} exists; pass --force to overwrite it") from None
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        if os.path.lexists(path):
            raise ConflictError(f"{path} exists; pass --force to overwrite it") from None
        os.rename(temporary, path)


def _sync_folder(folder: Path) -> None:
    # The rename is only durable once the folder is; not every platform can open one.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_error(path: Path, exc: OSError) -> MemoriesError:
    return MemoriesError(f"cannot write {path} ({exc.strerror or type(exc).__name__})")


# -- credentials ----------------------------------------------------------------------------


@cli.group()
def credential() -> None:
    """Store secrets (passwords, tokens, keys). Their values are never shown or listed."""


@credential.command("put")
@click.argument("title")
@click.option(
    "--secret-stdin",
    is_flag=True,
    help="Read the secret from standard input (all of it, minus one final line break).",
)
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@vault_option
@json_option
@reports_errors
def credential_put(
    title: str, secret_stdin: bool, tags: tuple[str, ...], vault: str | None, as_json: bool
) -> None:
    """Store a secret called TITLE and print its short id. Needs `memories sudo`.

    The secret is asked twice (hidden) unless --secret-stdin is given. It is never printed.

    \b
    Examples:
      memories sudo
      memories credential put "GitHub token"
      pass show github | memories credential put "GitHub token" --secret-stdin
    """
    from pydantic import SecretStr

    from memories.service.requests import CredentialPutRequest

    if secret_stdin:
        secret = read_stdin_text().removesuffix("\n").removesuffix("\r")
    elif not sys.stdin.isatty():
        raise UsageError("no terminal to ask for the secret; pass --secret-stdin")
    else:
        secret = click.prompt(
            "Secret", hide_input=True, confirmation_prompt="Repeat the secret", err=True
        )
    if not secret:
        raise UsageError("the secret must not be empty")
    response = call(
        CredentialPutRequest(
            op="credential_put",
            vault=vault,
            title=title,
            secret=SecretStr(secret),
            tags=list(tags) if tags else None,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))
