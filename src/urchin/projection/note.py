"""Writing the day's note: read it, splice the block in, replace it atomically.

A note whose block is already current is not rewritten. The write is
:func:`urchin.fsutil.write_atomically` (keeping the note's permission bits and,
where allowed, its owner), retried when someone else changed the note between our
read and our rename. A symlinked note is followed: its target is updated and the
link stays a link.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from urchin.errors import ProjectionError
from urchin.fsutil import write_atomically
from urchin.projection.block import block_text, render_block
from urchin.projection.markers import MarkerStyle, Splice, splice_note
from urchin.projection.window import Window, select_events

__all__ = ["ProjectionResult", "note_path", "project_daily_note"]

_ATTEMPTS = 3


def note_path(vault_root: Path, day: date) -> Path:
    """``<vault_root>/daily/YYYY-MM-DD.md``."""
    return vault_root / "daily" / f"{day.isoformat()}.md"


@dataclass(frozen=True, slots=True)
class ProjectionResult:
    """What a projection did (or, with ``dry_run``, would do)."""

    path: Path
    created: bool
    appended: bool
    events: int
    changed: bool
    style: MarkerStyle
    body: tuple[str, ...]
    malformed: int = 0
    dry_run: bool = False

    @property
    def block(self) -> str:
        """The block with its markers, LF line endings."""
        return block_text(self.body, self.style)

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "created": self.created,
            "appended": self.appended,
            "events": self.events,
            "changed": self.changed,
        }


class _NoteChanged(Exception):
    """Someone wrote the note between our read and our rename; start over."""


def project_daily_note(
    journal_path: Path,
    vault_root: Path,
    window: Window,
    *,
    home: Path | None = None,
    dry_run: bool = False,
) -> ProjectionResult:
    """Write the summary of ``window``'s events into the day's note under ``vault_root``.

    With ``dry_run`` nothing is created or written, but the note's markers are
    still checked. A note whose block is already current is not rewritten.

    Raises:
        JournalReadError: the journal exists but cannot be read.
        ProjectionError: the vault folder is missing or not writable, ``daily`` or
            the note is not what it should be, or the note's markers are broken.
            The note is left untouched.
    """
    selection = select_events(journal_path, window)
    body = render_block(selection.events, home=home, tz=window.tz)
    path = note_path(vault_root, window.day)
    daily = path.parent
    if not vault_root.is_dir():
        if vault_root.exists():
            raise ProjectionError(f"the vault root {vault_root} is not a folder")
        raise ProjectionError(
            f"the vault folder {vault_root} does not exist; create it, or point urchin at "
            "your vault with `urchin config set vault_root PATH`"
        )
    if daily.exists() and not daily.is_dir():
        raise ProjectionError(f"{daily} is not a folder; daily notes go in a folder named daily")

    def result(splice: Splice, changed: bool) -> ProjectionResult:
        return ProjectionResult(
            path=path,
            created=splice.created,
            appended=splice.appended,
            events=len(selection.events),
            changed=changed,
            style=splice.style,
            body=tuple(body),
            malformed=selection.malformed,
            dry_run=dry_run,
        )

    for _ in range(_ATTEMPTS):
        target = _resolve(path)
        note, previous = _read_note(target, path)
        splice = splice_note(note, body, str(path))
        if splice.data == note:
            return result(splice, changed=False)
        if dry_run:
            return result(splice, changed=True)
        if not daily.is_dir():
            _make_folder(daily)
        try:
            _replace_atomically(target, splice.data, previous, path)
        except _NoteChanged:
            continue
        return result(splice, changed=True)
    raise ProjectionError(f"{path} kept changing while urchin updated it; run the projection again")


def _resolve(path: Path) -> Path:
    # Replacing a symlink would turn it into a plain file: write where it points.
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _read_note(target: Path, shown: Path) -> tuple[bytes | None, os.stat_result | None]:
    try:
        before = os.stat(target)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise ProjectionError(f"cannot read {shown}: {exc.strerror or exc}") from exc
    # Checked before opening: opening a FIFO would block.
    if not stat.S_ISREG(before.st_mode):
        raise ProjectionError(f"{shown} exists but is not a regular file")
    try:
        with open(target, "rb") as handle:
            current = os.fstat(handle.fileno())
            data = handle.read()
    except OSError as exc:
        raise ProjectionError(f"cannot read {shown}: {exc.strerror or exc}") from exc
    return data, current


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise ProjectionError(
            f"cannot create the folder {folder}: {exc.strerror or exc}; "
            "check that the vault is writable"
        ) from exc


def _unchanged(target: Path, previous: os.stat_result | None) -> bool:
    try:
        now = os.stat(target)
    except FileNotFoundError:
        return previous is None
    if previous is None:
        return False
    fields = ("st_dev", "st_ino", "st_size", "st_mtime_ns")
    return all(getattr(now, name) == getattr(previous, name) for name in fields)


def _replace_atomically(
    target: Path, data: bytes, previous: os.stat_result | None, shown: Path
) -> None:
    """Raises:
    _NoteChanged: the note changed since ``previous`` was read; nothing was written.
    ProjectionError: the note cannot be written; it is untouched.
    """

    def check() -> None:
        if not _unchanged(target, previous):
            raise _NoteChanged

    try:
        # A new note gets 0666 minus the umask, like any editor would create it;
        # an existing one keeps its bits and, where allowed, its owner.
        write_atomically(target, data, mode=0o666, like=previous, before_replace=check)
    except OSError as exc:
        raise ProjectionError(
            f"cannot write {shown}: {exc.strerror or exc}; check that {target.parent} is writable"
        ) from exc
