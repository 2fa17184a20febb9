"""Per-user token files: ``<data home>/clients/<connection>.token``, mode 0600 in a 0700
folder, holding the grant token and a line break, nothing else.

Client configs name this file (``memories mcp --token-file PATH``) instead of carrying the
token, so a config that is shared, synced or pasted into a bug report gives nothing away.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from memories.clients.errors import UnreadableConfigError
from memories.fsutil import fsync_dir

__all__ = ["remove_token", "token_file", "token_present", "write_token"]


def token_file(data_home: Path, connection: str) -> Path:
    """Where the token of ``connection`` lives."""
    return data_home / "clients" / f"{connection}.token"


def token_present(path: Path) -> bool:
    """Whether a token file is there (a regular file, not a link).

    Raises:
        UnreadableConfigError: something other than a regular file is in its place.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableConfigError(f"{path} is not a regular file; remove it and connect again")
    return info.st_size > 0


def write_token(path: Path, token: str) -> None:
    """Write ``token`` to ``path`` atomically with mode 0600 (folder created 0700).

    Raises:
        OSError: it cannot be written.
    """
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    fd, temp_name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    published = False
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(token.encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
        published = True
        fsync_dir(folder)
    finally:
        if not published:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)


def remove_token(path: Path) -> bool:
    """Delete the token file; False when there was none. Raises ``OSError``."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
