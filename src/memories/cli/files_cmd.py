"""file put|get and credential put: binary files and secrets in the vault."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import sys
import tempfile
from pathlib import Path

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
from memories.cli.render import clean_line, console, emit_json
from memories.errors import ConflictError, MemoriesError, UsageError
from memories.ipc.wire import MAX_FRAME

__all__ = ["max_upload_bytes", "write_new_file"]

# Room for the request envelope around the base64url payload.
_ENVELOPE_ROOM = 64 * 1024


def max_upload_bytes(configured: int) -> int:
    """The largest file one request can carry: the configured limit, and what fits into one
    IPC frame once base64url-encoded (4 characters per 3 bytes)."""
    return min(configured, (MAX_FRAME - _ENVELOPE_ROOM) * 3 // 4)


def _size(size: int) -> str:
    from memories.views.format import format_size

    return format_size(size)


@cli.group("file")
def file_group() -> None:
    """Store files (certificates, configs, images) encrypted in the vault.

    \b
    Example:
      memories file put ./id_ed25519.pub --tag ssh
      memories file get 1a2b3c4d -o ./restored.pub
    """


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

    \b
    Examples:
      memories file put ./nginx.conf --tag infra
      memories file put scan.pdf --title "Lease contract" --private
    """
    from memories.views.encoding import b64u_encode

    limit = max_upload_bytes(settings().max_file_bytes)
    try:
        size = path.stat().st_size
        if size > limit:
            raise UsageError(f"the file is {_size(size)}; files up to {_size(limit)} fit")
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    if len(data) > limit:
        raise UsageError(f"the file is {_size(len(data))}; files up to {_size(limit)} fit")
    guessed = mimetypes.guess_type(path.name)[0]
    response = call(
        "file_put",
        vault=vault,
        name=path.name,
        media_type=media_type or guessed or "application/octet-stream",
        data=b64u_encode(data),
        title=title,
        tags=list(tags) if tags else None,
        private=True if private else None,
    )
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))


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

    Refuses to overwrite an existing file unless --force is given. New files are readable
    by you only.

    \b
    Examples:
      memories file get 1a2b3c4d                   # writes ./<stored name>
      memories file get 1a2b3c4d -o ~/restored.conf --force
      memories file get 1a2b3c4d -o - | sha256sum
    """
    from memories.views.encoding import b64u_decode

    if output == "-" and as_json:
        raise UsageError(
            "-o - writes the file to standard output; it cannot be combined with --json"
        )
    response = call("file_get", ref=ref)
    name = str(response.get("name") or "")
    data = b64u_decode(str(response.get("data", "")))
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    destination = _destination(output, name)
    write_new_file(destination, data, force=force)
    if as_json:
        emit_json(
            {
                "name": name,
                "media_type": response.get("media_type"),
                "size": len(data),
                "path": str(destination),
            }
        )
        return
    console.print(f"wrote {_size(len(data))} to {clean_line(str(destination), 300)}")


def _destination(output: str | None, stored_name: str) -> Path:
    safe = Path(stored_name).name
    if output is None or Path(output).is_dir():
        if safe in ("", ".", "..") or safe != stored_name:
            raise UsageError("the stored file name cannot be used here; give -o PATH")
        return Path(output or ".") / safe
    return Path(output)


def write_new_file(path: Path, data: bytes, *, force: bool) -> None:
    """Write ``data`` to ``path`` (mode 0600 when created).

    Without ``force`` an existing file is never touched; with it the file is replaced
    atomically (written beside it, then renamed over it).

    Raises:
        ConflictError: ``path`` exists and ``force`` is false.
        MemoriesError: the file cannot be written.
    """
    try:
        if not force:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                raise ConflictError(f"{path} exists; pass --force to overwrite it") from None
            written = False
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                written = True
            finally:
                if not written:  # never leave a partial file behind, even on an interrupt
                    with contextlib.suppress(OSError):
                        path.unlink()
            return
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        replaced = False
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
            replaced = True
        finally:
            if not replaced:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
    except OSError as exc:
        raise MemoriesError(f"cannot write {path} ({exc.strerror or type(exc).__name__})") from None


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
        "credential_put",
        vault=vault,
        title=title,
        secret=secret,
        tags=list(tags) if tags else None,
    )
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))
