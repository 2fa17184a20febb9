"""An rclone transport: every backend rclone reaches (S3, SFTP, WebDAV/Nextcloud, Google
Drive, OneDrive, Dropbox, …) through the user's own rclone remotes.

The ``rclone`` binary (the Debian package) is run directly, never through a shell, with the
remote and path as one argument after ``--``. Credentials stay in rclone's own config file;
this module never reads or passes one. rclone's output is not repeated in errors (a backend
may name hosts or users there); an error names the operation, the remote and the exit code.

- list: ``rclone lsjson -R --files-only REMOTE:PATH`` (a folder that does not exist yet holds
  nothing)
- put:  ``rclone rcat REMOTE:PATH/<name>`` with the bytes on standard input
- get:  ``rclone cat REMOTE:PATH/<name>``, whose bytes must hash to the name (a backend that
  shows an upload before it is complete is read as not there yet)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Final

from memories.errors import UsageError
from memories.sync.errors import ObjectMissing, TransportError
from memories.sync.transports.base import MAX_OBJECT_BYTES, check_name, content_matches, is_name

__all__ = ["RcloneTransport", "check_remote"]

# rclone remote names: letters, digits, _ - . + @ and spaces, not starting with - or a space.
_REMOTE: Final = re.compile(r"[A-Za-z0-9_.+@][A-Za-z0-9_.+@ -]{0,63}:[^\x00-\x1f\x7f]{0,1024}")
_NOT_FOUND: Final = (3, 4)  # rclone's exit codes: directory not found, file not found
_TIMEOUT: Final = 600.0
_FLAGS: Final = ("--contimeout", "15s", "--timeout", "60s", "--low-level-retries", "2", "-q")


def check_remote(remote: str) -> str:
    """Return ``remote`` if it is ``NAME:PATH`` with a configured-remote name.

    Connection strings (``:backend,key=value:``) are refused: they would put credentials in
    our configuration instead of rclone's. Raises ``UsageError``.
    """
    if not isinstance(remote, str) or not _REMOTE.fullmatch(remote):
        raise UsageError(
            "an rclone target is REMOTE:PATH, with REMOTE a remote from `rclone config`"
        )
    return remote


class RcloneTransport:
    """Objects under ``REMOTE:PATH`` through the ``rclone`` binary."""

    def __init__(self, remote: str, *, binary: str | None = None) -> None:
        self.remote = check_remote(remote).rstrip("/")
        found = binary or shutil.which("rclone")
        if found is None:
            raise TransportError("rclone is not installed; install the rclone package")
        self._binary = found

    @property
    def description(self) -> str:
        return f"rclone {self.remote}"

    def _target(self, name: str) -> str:
        base = self.remote
        return f"{base}/{name}" if not base.endswith(":") else f"{base}{name}"

    def _run(self, what: str, command: list[str], target: str, data: bytes | None = None) -> bytes:
        # The target goes after "--", so no path can be read as an option.
        argv = [self._binary, *command, *_FLAGS, "--", target]
        try:
            done = subprocess.run(  # fixed binary, no shell, checked arguments
                argv,
                input=data if data is not None else b"",
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
                env=os.environ.copy(),
            )
        except subprocess.TimeoutExpired as exc:
            raise TransportError(f"rclone timed out during {what} on {self.remote}") from exc
        except OSError as exc:
            raise TransportError(f"cannot run rclone for {what} ({exc.strerror})") from exc
        if done.returncode in _NOT_FOUND:
            raise ObjectMissing(f"{self.description} does not hold that object yet")
        if done.returncode != 0:
            raise TransportError(
                f"rclone {what} on {self.remote} failed (exit code {done.returncode}); "
                "run `rclone lsd` on the remote to check it"
            )
        return done.stdout

    def put(self, name: str, data: bytes) -> None:
        """Upload ``data`` as ``name``. Raises ``UsageError``, ``TransportError``."""
        check_name(name)
        if len(data) > MAX_OBJECT_BYTES:
            raise TransportError("an object is too large to store")
        try:
            self._run("upload", ["rcat"], self._target(name), data)
        except ObjectMissing as exc:
            raise TransportError(f"rclone cannot create the folder on {self.remote}") from exc

    def get(self, name: str) -> bytes:
        """Download ``name``. Raises ``ObjectMissing`` when absent or incomplete,
        ``TransportError``, ``UsageError``."""
        check_name(name)
        data = self._run("download", ["cat"], self._target(name))
        if len(data) > MAX_OBJECT_BYTES or not content_matches(name, data):
            raise ObjectMissing(f"an object on {self.remote} is incomplete or damaged")
        return data

    def list(self) -> list[str]:
        """The object names under the remote path. Raises ``TransportError``."""
        try:
            out = self._run(
                "listing",
                ["lsjson", "-R", "--files-only", "--no-modtime", "--no-mimetype"],
                self.remote,
            )
        except ObjectMissing:
            return []
        try:
            items = json.loads(out)
        except ValueError as exc:
            raise TransportError(f"rclone gave an unreadable listing of {self.remote}") from exc
        if not isinstance(items, list):
            raise TransportError(f"rclone gave an unreadable listing of {self.remote}")
        names = {
            path
            for item in items
            if isinstance(item, dict) and isinstance(path := item.get("Path"), str)
        }
        return sorted(name for name in names if is_name(name))
