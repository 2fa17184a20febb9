"""Reading and replacing client config files safely.

A config is read once, edited in memory and published by a temporary file in the same folder
(written, fsynced, given the original's mode, renamed over it, the folder fsynced), so a crash
leaves the old file or the new one, never half of either. Before the rename the file is read
again: when its client rewrote it meanwhile, the edit is refused (the caller starts over)
rather than lose the client's change. The original is kept as a timestamped ``0600`` backup.

Symbolic links: a user-level config that is a link (dotfile managers such as GNU Stow make
them) is followed and its target edited in place, so the link survives. Inside a project a
link is refused: a repository must not be able to point our write at a file elsewhere.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from memories.clients.errors import ConfigChangedError, UnreadableConfigError
from memories.fsutil import fsync_dir

__all__ = [
    "ConfigFile",
    "backup",
    "config_lines",
    "read_config",
    "replace_config",
    "unified_diff",
]

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def config_lines(text: str) -> list[str]:
    """``text`` cut after each newline, keeping it: the line breaks of TOML and JSON. Unlike
    ``str.splitlines``, which also cuts at characters a string value may hold (U+0085,
    U+2028, form feed ...), so a line-based edit could land inside a string."""
    return _LINE.findall(text)


_MAX_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ConfigFile:
    """A config as read: where it is (``path``, the link itself; ``real``, what gets written),
    its text (``None`` when the file does not exist yet), raw bytes and mode."""

    path: Path
    real: Path
    text: str | None
    raw: bytes | None
    mode: int | None


def _refuse_links_below(path: Path, root: Path) -> None:
    """Refuse ``path`` when it, or a folder between ``root`` and it, is a symbolic link."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return
    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise UnreadableConfigError(
                f"{current} is a symbolic link; inside a project memories edits only "
                "regular files (replace the link with the file, or edit it by hand)"
            )


def read_config(path: Path, *, project_root: Path | None = None) -> ConfigFile:
    """Read the config at ``path`` (which may not exist yet).

    ``project_root`` marks a project-level file: links between the root and the file are
    refused. Elsewhere a link is followed.

    Raises:
        UnreadableConfigError: the file is a link inside a project, not a regular file, too
            big, not UTF-8, or cannot be read.
    """
    if project_root is not None:
        _refuse_links_below(path, project_root)
    real = Path(os.path.realpath(path))
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return ConfigFile(path, real, None, None, None)
    except OSError as exc:
        raise UnreadableConfigError(f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableConfigError(f"{path} is not a regular file")
    if info.st_size > _MAX_BYTES:
        raise UnreadableConfigError(f"{path} is larger than 16 MiB; not a config file")
    try:
        raw = real.read_bytes()
    except OSError as exc:
        raise UnreadableConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableConfigError(f"{path} is not UTF-8 text; nothing was changed") from None
    return ConfigFile(path, real, text, raw, stat.S_IMODE(info.st_mode))


def unified_diff(config: ConfigFile, new_text: str) -> str:
    """The change from ``config`` to ``new_text`` as a unified diff (empty when none)."""
    old = config_lines(config.text or "")
    new = config_lines(new_text)
    name = str(config.path)
    lines = difflib.unified_diff(
        old, new, fromfile=name if config.text is not None else "/dev/null", tofile=name
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def backup(config: ConfigFile) -> Path | None:
    """Copy the original beside it as ``NAME.memories-backup-YYYYMMDDTHHMMSSZ`` (mode 0600).

    Returns the backup's path, or None when there was no original.

    Raises:
        OSError: the backup cannot be written.
    """
    if config.raw is None:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = config.real.with_name(f"{config.real.name}.memories-backup-{stamp}")
    for attempt in range(100):
        candidate = base if attempt == 0 else base.with_name(f"{base.name}-{attempt}")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            os.write(fd, config.raw)
            os.fsync(fd)
        finally:
            os.close(fd)
        return candidate
    raise FileExistsError(f"too many backups of {config.real} this second")


def replace_config(config: ConfigFile, new_text: str, *, new_mode: int = 0o600) -> None:
    """Publish ``new_text`` at ``config.real`` atomically, keeping the original's mode
    (``new_mode`` for a new file; missing folders are created 0700).

    Raises:
        ConfigChangedError: the file changed since it was read (nothing was written).
        OSError: the file cannot be written.
    """
    target = config.real
    folder = target.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = config.mode if config.mode is not None else new_mode
    fd, temp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    temp = Path(temp_name)
    published = False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new_text.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        if _current_bytes(target) != config.raw:
            raise ConfigChangedError(f"{config.path} changed while it was being edited")
        os.replace(temp, target)
        published = True
        fsync_dir(folder)
    finally:
        if not published:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
