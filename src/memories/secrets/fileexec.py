"""``memories file exec``: a vault file as a private temporary file for one program run.

The plaintext lives in a fresh folder made with ``mkdtemp`` (mode 0700, a random name created
atomically, so nothing can be planted at it beforehand), on a memory file system where one is
available (``$XDG_RUNTIME_DIR``, else ``/dev/shm``; ``$TMPDIR`` when the user set it). The file
is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600: a symlink or file already at
its path is refused, never followed. The folder and file are removed when the program exits,
crashes or is ended by a signal this process receives (SIGTERM, SIGHUP are passed on to the
program first; SIGINT reaches it from the terminal). Only a SIGKILL of this process can leave
the file behind, in a folder only the user can read (and, on a memory file system, gone at the
next boot).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from memories.errors import ConflictError, MemoriesError, UsageError

__all__ = ["PLACEHOLDER", "child_argv", "private_file", "run_foreground", "scratch_base"]

#: Where the temporary path goes in the program's arguments.
PLACEHOLDER: Final = "{}"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def scratch_base() -> str:
    """The folder the private folder is made in: tmpfs where available."""
    if os.environ.get("TMPDIR"):
        return tempfile.gettempdir()
    # mkdtemp makes a fresh 0700 folder with a random name, so a shared /dev/shm is safe.
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):  # noqa: S108
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return tempfile.gettempdir()


def child_argv(command: Sequence[str], path: str) -> list[str]:
    """``command`` with every ``{}`` replaced by ``path``.

    Raises:
        UsageError: no command, or no argument holds ``{}``.
    """
    if not command:
        raise UsageError("give the command to run after --")
    if not any(PLACEHOLDER in arg for arg in command[1:]):
        raise UsageError(
            "put {} where the file's path goes, e.g. -- kubectl --kubeconfig {} get pods"
        )
    return [command[0], *(arg.replace(PLACEHOLDER, path) for arg in command[1:])]


def _file_name(stored: str) -> str:
    # The stored name keeps the extension tools look at (.env, .yaml); nothing else of it.
    base = os.path.basename(stored)
    name = _SAFE_NAME.sub("_", base).lstrip(".") or "file"
    return ("." + name if base.startswith(".") else name)[:100]


@contextlib.contextmanager
def private_file(stored_name: str, *, base: str | None = None) -> Iterator[tuple[int, str]]:
    """A new 0600 file in a new 0700 folder: yields its open descriptor and path, and removes
    both when the block ends, however it ends.

    Raises:
        ConflictError: something already sits at the file's path (it is not followed).
        MemoriesError: the folder or file cannot be created.
    """
    try:
        folder = tempfile.mkdtemp(prefix="memories-exec-", dir=base or scratch_base())
    except OSError as exc:
        raise MemoriesError(f"cannot make a private folder ({exc.strerror})") from exc
    path = os.path.join(folder, _file_name(stored_name))
    fd = -1
    try:
        try:
            fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except FileExistsError as exc:
            raise ConflictError(
                "something already sits at the private file's path; nothing was written"
            ) from exc
        except OSError as exc:
            raise MemoriesError(f"cannot create the private file ({exc.strerror})") from exc
        yield fd, path
    finally:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        _remove(folder)


def _remove(folder: str) -> None:
    # Only what we made: the folder's direct entries (a program may add files next to ours).
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            with contextlib.suppress(FileNotFoundError):
                if entry.is_dir(follow_symlinks=False):
                    _remove(entry.path)
                else:
                    os.unlink(entry.path)
        os.rmdir(folder)


def run_foreground(argv: Sequence[str]) -> tuple[int | None, int | None]:
    """Run ``argv`` (no shell) in the foreground; returns (exit code, signal).

    SIGTERM and SIGHUP sent to this process are passed on to the program; SIGINT reaches it
    from the terminal. Either way this waits for the program, so the caller's cleanup runs
    after it ended.

    Raises:
        UsageError: the program cannot be started (not found, not executable).
    """
    try:
        child = subprocess.Popen(list(argv), close_fds=True)
    except OSError as exc:
        raise UsageError(f"cannot run the program ({exc.strerror or type(exc).__name__})") from exc

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:
                continue  # the program got the SIGINT too; it decides when to stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return (None, -code) if code < 0 else (code, None)


def is_private(path: str) -> bool:
    """Whether ``path`` is a regular file only its owner can read, in a folder only its owner
    can enter (what :func:`private_file` makes)."""
    info, folder = os.lstat(path), os.lstat(str(Path(path).parent))
    return (
        (info.st_mode & 0o777) == 0o600
        and (folder.st_mode & 0o777) == 0o700
        and info.st_uid == folder.st_uid == os.geteuid()
    )
