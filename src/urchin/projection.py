"""Daily-note projection: a summary of a day's events inside a marker block of a Markdown note.

The note is ``<vault_root>/daily/YYYY-MM-DD.md`` (the local date). urchin owns
only the lines between a start and an end marker; every byte outside them is
kept exactly (line endings, a missing final newline, a byte-order mark).

Markers. A marker counts only when it stands alone on its line (spaces, tabs, a
CR and, on the first line, a UTF-8 BOM around it are allowed; the name is
matched case-insensitively). Three styles are recognised, in this order of
preference::

    <!-- URCHIN:start -->            / <!-- URCHIN:end -->             current
    <!-- URCHIN:START:activity -->   / <!-- URCHIN:END:activity -->    earlier versions (C)
    <!-- URCHIN:DAILY -->            / <!-- /URCHIN:DAILY -->          earlier versions (A)

A note that already holds a pair of an earlier style keeps those markers and
gets its text between them replaced, so notes (and templates) written for
earlier versions keep working and never end up with two blocks. A note with no
marker at all gets a current-style block appended after a blank line; a missing
note (and ``daily/`` folder) is created. The vault root itself must exist: a
missing one more likely means a wrong ``vault_root`` than a wish for a new vault.
Every style that appears must be a single start line followed by a single end
line, and pairs of different styles must not overlap; otherwise the projection
stops with :class:`ProjectionError` and the note is left untouched.

The block holds no "generated at" time, so projecting the same events twice
gives the same bytes, and a note whose block is already current is not
rewritten at all. Writes go to a temporary file in the note's folder that is
fsynced and renamed over the note (keeping its permission bits), after which
the folder is fsynced. A symlinked note is followed: its target is updated and
the link stays a link.

Event text is neutralised before it reaches the note: only its first line is
used, control characters become spaces, and ``<`` becomes ``&lt;``, so no event
can open an HTML comment, forge a marker (even for tools that search for markers
inside a line) or inject HTML. At most :data:`MAX_BULLETS` events get a bullet.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from itertools import combinations
from pathlib import Path

from urchin.errors import UrchinError, UsageError
from urchin.event import Event
from urchin.journal import Journal

__all__ = [
    "ACTIVITY_MARKERS",
    "CURRENT_MARKERS",
    "DAILY_MARKERS",
    "MARKER_STYLES",
    "MAX_BULLETS",
    "EventSelection",
    "MarkerStyle",
    "ProjectionError",
    "ProjectionResult",
    "Splice",
    "Window",
    "block_text",
    "note_path",
    "project_daily_note",
    "render_block",
    "select_events",
    "splice_note",
]

#: At most this many bullet lines; the rest is summarised by a "… and N more" line.
MAX_BULLETS = 200
#: Length of a bullet's text (title or first line of content), ellipsis included.
TEXT_LIMIT = 120
_SOURCE_LIMIT = 40
_WORKSPACE_LIMIT = 160
_MAX_SOURCES_LISTED = 20
_EMPTY = "_(no activity in window)_"
_ATTEMPTS = 3


class ProjectionError(UrchinError):
    """The daily note cannot be updated: broken markers, or the vault cannot be read or written.

    The note is never modified when this is raised.
    """

    code = "projection"


@dataclass(frozen=True, slots=True)
class MarkerStyle:
    """A pair of marker lines that delimit urchin's block in a note."""

    name: str
    start: str
    end: str


CURRENT_MARKERS = MarkerStyle("current", "<!-- URCHIN:start -->", "<!-- URCHIN:end -->")
ACTIVITY_MARKERS = MarkerStyle(
    "activity", "<!-- URCHIN:START:activity -->", "<!-- URCHIN:END:activity -->"
)
DAILY_MARKERS = MarkerStyle("daily", "<!-- URCHIN:DAILY -->", "<!-- /URCHIN:DAILY -->")
#: Recognised styles, preferred first.
MARKER_STYLES = (CURRENT_MARKERS, ACTIVITY_MARKERS, DAILY_MARKERS)

_MARKER_LINE = re.compile(rb"<!--[ \t]*(/?URCHIN:[A-Za-z0-9_:]+)[ \t]*-->", re.IGNORECASE)


def _marker_tokens() -> dict[bytes, tuple[MarkerStyle, bool]]:
    """Lower-cased marker names mapped to (style, is the start marker)."""
    tokens: dict[bytes, tuple[MarkerStyle, bool]] = {}
    for style in MARKER_STYLES:
        for marker, is_start in ((style.start, True), (style.end, False)):
            match = _MARKER_LINE.fullmatch(marker.encode("ascii"))
            assert match is not None
            tokens[match.group(1).lower()] = (style, is_start)
    return tokens


_TOKENS = _marker_tokens()
_BOM = b"\xef\xbb\xbf"
logger = logging.getLogger(__name__)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


# -- which events ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """Which events a note summarises, and which day's note receives them.

    With ``since`` unset the window is the local calendar day ``day``; otherwise
    it is every event at or after ``since`` (UTC), written to the note of ``day``.
    ``tz`` is the local time zone (``None``: the system's).
    """

    day: date
    since: datetime | None = None
    tz: tzinfo | None = None

    @classmethod
    def for_day(cls, day: date, tz: tzinfo | None = None) -> Window:
        """The events whose local timestamp falls on ``day``."""
        return cls(day, None, tz)

    @classmethod
    def last_hours(
        cls, hours: float, *, now: datetime | None = None, tz: tzinfo | None = None
    ) -> Window:
        """The last ``hours`` hours, projected into today's (local) note.

        Raises:
            UsageError: ``hours`` is not a positive number of hours that fits in a date.
        """
        if not hours > 0:
            raise UsageError("hours must be a positive number")
        current = (now or datetime.now(UTC)).astimezone(UTC)
        try:
            since = current - timedelta(hours=hours)
        except OverflowError:
            raise UsageError("hours is too large") from None
        return cls(current.astimezone(tz).date(), since, tz)

    def contains(self, moment: datetime) -> bool:
        if self.since is not None:
            return moment >= self.since
        return moment.astimezone(self.tz).date() == self.day


@dataclass(frozen=True, slots=True)
class EventSelection:
    """The events in a window, oldest first, and what the journal scan skipped."""

    events: list[Event]
    malformed: int
    torn_tail: bool


def select_events(journal_path: Path, window: Window) -> EventSelection:
    """Scan the journal for the events in ``window``, oldest first (journal order on ties).

    A missing journal has no events.

    Raises:
        JournalReadError: the journal exists but cannot be read.
    """
    scan = Journal(journal_path).scan()
    events = [entry.event for entry in scan if window.contains(entry.event.timestamp)]
    events.sort(key=lambda event: event.timestamp)
    return EventSelection(events, scan.stats.malformed, scan.stats.torn_tail)


# -- the block -------------------------------------------------------------------------


def _controls() -> dict[int, str]:
    codes = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF]
    # Bidirectional overrides can make a line read differently from what it says.
    codes += [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F]
    return dict.fromkeys(codes, " ")


_CONTROLS = _controls()


def _clean(text: str, limit: int) -> str:
    """One safe line of at most ``limit`` characters: no controls, no HTML, no markers."""
    # Lone surrogates (from \\ud800 escapes in the journal) cannot be written as UTF-8.
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = " ".join(text.translate(_CONTROLS).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    # After cutting, so the entity is never split; "<" is what every marker and tag starts with.
    return text.replace("<", "&lt;")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _label(event: Event) -> str:
    raw = event.title if event.title and event.title.strip() else _first_line(event.content)
    return _clean(raw, TEXT_LIMIT) or "(no text)"


def _workspace_label(workspace: str | None, home: Path | None) -> str | None:
    if not workspace or not workspace.strip():
        return None
    path = workspace.strip()
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    if home is not None:
        home_text = str(home).rstrip("/")
        if home_text and path == home_text:
            path = "~"
        elif home_text and path.startswith(home_text + "/"):
            path = "~" + path[len(home_text) :]
    return _clean(path, _WORKSPACE_LIMIT) or None


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def render_block(
    events: Sequence[Event],
    *,
    home: Path | None = None,
    tz: tzinfo | None = None,
    max_bullets: int = MAX_BULLETS,
) -> list[str]:
    """The lines between the markers (without the markers) summarising ``events``.

    A heading with the total, the count per source (most first, then by name),
    then one section per workspace (most events first, "(no workspace)" last)
    with ``- HH:MM **source** — text`` bullets in time order. Only the newest
    ``max_bullets`` events get a bullet; a final line counts the rest. ``home``
    is shown as ``~``; times are in ``tz`` (``None``: the system's zone).
    """
    if not events:
        return [_EMPTY]
    ordered = sorted(events, key=lambda event: event.timestamp)
    lines = [f"### urchin: {_plural(len(ordered), 'event')}"]

    per_source = Counter(event.source for event in ordered)
    ranked = sorted(per_source.items(), key=lambda item: (-item[1], item[0]))
    parts = [
        f"**{_clean(source, _SOURCE_LIMIT) or '(blank)'}** {count}"
        for source, count in ranked[:_MAX_SOURCES_LISTED]
    ]
    if len(ranked) > _MAX_SOURCES_LISTED:
        parts.append(f"+{len(ranked) - _MAX_SOURCES_LISTED} more sources")
    lines.append(" · ".join(parts))

    shown = set(range(max(0, len(ordered) - max_bullets), len(ordered)))
    sections: dict[str | None, list[int]] = {}
    for index, event in enumerate(ordered):
        sections.setdefault(_workspace_label(event.workspace, home), []).append(index)

    def order(item: tuple[str | None, list[int]]) -> tuple[bool, int, str]:
        label, members = item
        return (label is None, -len(members), label or "")

    for label, members in sorted(sections.items(), key=order):
        visible = [index for index in members if index in shown]
        if not visible:
            continue
        lines.append("")
        lines.append(f"#### {label or '(no workspace)'} · {len(members)}")
        for index in visible:
            event = ordered[index]
            when = event.timestamp.astimezone(tz).strftime("%H:%M")
            source = _clean(event.source, _SOURCE_LIMIT) or "(blank)"
            lines.append(f"- {when} **{source}** — {_label(event)}")
    hidden = len(ordered) - len(shown)
    if hidden:
        lines.append("")
        lines.append(f"_… and {hidden} more_")
    return lines


def block_text(body: Sequence[str], style: MarkerStyle = CURRENT_MARKERS) -> str:
    """The block as it appears in a note: markers around ``body``, LF line endings."""
    return "\n".join([style.start, *body, style.end]) + "\n"


# -- splicing the block into a note ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Splice:
    """The note's new bytes and how they were made."""

    data: bytes
    style: MarkerStyle
    created: bool
    appended: bool


@dataclass(frozen=True, slots=True)
class _MarkerLine:
    number: int  # 1-based
    start: int  # offset of the line
    end: int  # offset just after its line ending
    newline: bytes


def _marker_lines(data: bytes) -> dict[tuple[MarkerStyle, bool], list[_MarkerLine]]:
    found: dict[tuple[MarkerStyle, bool], list[_MarkerLine]] = {}
    offset = 0
    number = 0
    while offset < len(data):
        number += 1
        newline_at = data.find(b"\n", offset)
        end = len(data) if newline_at < 0 else newline_at + 1
        line = data[offset:end]
        newline = b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""
        text = line[: len(line) - len(newline)]
        if offset == 0 and text.startswith(_BOM):
            text = text[len(_BOM) :]
        text = text.strip(b" \t\r")
        if text.startswith(b"<!--"):
            match = _MARKER_LINE.fullmatch(text)
            known = _TOKENS.get(match.group(1).lower()) if match else None
            if known is not None:
                found.setdefault(known, []).append(_MarkerLine(number, offset, end, newline))
        offset = end
    return found


def _lines_text(markers: Sequence[_MarkerLine]) -> str:
    numbers = [str(marker.number) for marker in markers]
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(numbers)


def _find_block(data: bytes, label: str) -> tuple[MarkerStyle, _MarkerLine, _MarkerLine] | None:
    found = _marker_lines(data)
    advice = "fix the markers by hand; the note was left unchanged"
    pairs: list[tuple[MarkerStyle, _MarkerLine, _MarkerLine]] = []
    for style in MARKER_STYLES:
        starts = found.get((style, True), [])
        ends = found.get((style, False), [])
        if not starts and not ends:
            continue
        for marker, lines in ((style.start, starts), (style.end, ends)):
            if len(lines) > 1:
                raise ProjectionError(
                    f"{label} has {marker} {len(lines)} times ({_lines_text(lines)}); "
                    f"keep exactly one; {advice}"
                )
        if not ends:
            raise ProjectionError(
                f"{label} has {style.start} ({_lines_text(starts)}) but no {style.end} "
                f"after it; {advice}"
            )
        if not starts:
            raise ProjectionError(
                f"{label} has {style.end} ({_lines_text(ends)}) but no {style.start} "
                f"before it; {advice}"
            )
        start, end = starts[0], ends[0]
        if end.start < start.start:
            raise ProjectionError(
                f"{label} has {style.end} (line {end.number}) before {style.start} "
                f"(line {start.number}); {advice}"
            )
        pairs.append((style, start, end))
    for (style_a, start_a, end_a), (style_b, start_b, end_b) in combinations(pairs, 2):
        if start_a.start < end_b.end and start_b.start < end_a.end:
            raise ProjectionError(
                f"{label} has overlapping {style_a.start} (line {start_a.number}) and "
                f"{style_b.start} (line {start_b.number}) blocks; keep one; {advice}"
            )
    return pairs[0] if pairs else None


def splice_note(note: bytes | None, body: Sequence[str], label: str = "the note") -> Splice:
    """The note with ``body`` between its markers, or appended in a new block.

    ``note`` is the note's bytes, or ``None`` when it does not exist yet.

    Raises:
        ProjectionError: the markers are duplicated, unpaired, out of order or
            overlapping, or the note is UTF-16 (urchin writes UTF-8).
    """
    encoded = [line.encode("utf-8") for line in body]
    if note is None:
        data = _block_bytes(CURRENT_MARKERS, encoded, b"\n")
        return Splice(data, CURRENT_MARKERS, created=True, appended=False)
    if note.startswith(_UTF16_BOMS):
        raise ProjectionError(f"{label} is UTF-16 text; urchin writes UTF-8 notes only")
    block = _find_block(note, label)
    if block is not None:
        style, start, end = block
        # The start marker's own line ending, so a CRLF note stays CRLF.
        newline = start.newline
        inner = b"".join(line + newline for line in encoded)
        return Splice(note[: start.end] + inner + note[end.start :], style, False, False)
    newline = _newline_of(note)
    if note in (b"", _BOM) or note.endswith((b"\n\n", b"\n\r\n")):
        separator = b""
    elif note.endswith(b"\n"):
        separator = newline
    else:
        separator = newline + newline
    data = note + separator + _block_bytes(CURRENT_MARKERS, encoded, newline)
    return Splice(data, CURRENT_MARKERS, created=False, appended=True)


def _block_bytes(style: MarkerStyle, body: Sequence[bytes], newline: bytes) -> bytes:
    lines = [style.start.encode("ascii"), *body, style.end.encode("ascii")]
    return b"".join(line + newline for line in lines)


def _newline_of(data: bytes) -> bytes:
    first = data.find(b"\n")
    return b"\r\n" if first > 0 and data[first - 1 : first] == b"\r" else b"\n"


# -- reading and writing the note ------------------------------------------------------


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
    folder = target.parent
    tmp = folder / f".{target.name}.{secrets.token_hex(6)}.tmp"
    try:
        # A new note gets 0666 minus the umask, like any editor would create it;
        # an existing one keeps its bits (set below, after a private start).
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
            0o666 if previous is None else 0o600,
        )
    except OSError as exc:
        raise ProjectionError(
            f"cannot write {shown}: {exc.strerror or exc}; check that {folder} is writable"
        ) from exc
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if previous is not None:
                os.fchmod(fd, stat.S_IMODE(previous.st_mode))
                if (previous.st_uid, previous.st_gid) != (os.geteuid(), os.getegid()):
                    # Only a privileged writer can give the file back to its owner;
                    # anyone else keeps the note under their own name, as editors do.
                    with contextlib.suppress(PermissionError):
                        os.fchown(fd, previous.st_uid, previous.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        if not _unchanged(target, previous):
            raise _NoteChanged
        os.replace(tmp, target)
    except (OSError, _NoteChanged) as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, _NoteChanged):
            raise
        raise ProjectionError(f"cannot write {shown}: {exc.strerror or exc}") from exc
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    # The rename has already happened, so a failure here only weakens durability
    # after a crash; reporting the write as failed would be wrong.
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        logger.warning("cannot open %s to flush the rename: %s", folder, exc.strerror)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some filesystems cannot fsync a directory at all.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            logger.warning("cannot flush %s after the rename: %s", folder, exc.strerror)
    finally:
        os.close(fd)
