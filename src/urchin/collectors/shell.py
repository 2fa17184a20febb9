"""Shell history collectors: bash, zsh (extended history) and fish.

Each reads its history file from a byte checkpoint (see :mod:`urchin.collectors.tail`)
and emits one ``command`` event per history entry, with source ``shell`` (bash),
``zsh`` or ``fish`` and no workspace (history files do not record it).

Timestamps come from the history when it has them (bash ``#<epoch>`` lines,
zsh ``: <start>:<elapsed>;``, fish ``when:``). Entries without one get the history
file's modification time at reading: the best bound we have, since shells write
history shortly after the command ran (at exit, or at once with incremental modes).

Shells rewrite their history files (bash and zsh trim to HISTFILESIZE/SAVEHIST,
bash without ``histappend`` writes its whole list at exit, fish "vacuums"), so a
rewrite is normal, not an error. After one, the file is parsed again and only
entries not seen before are emitted:

- timestamped entries are recognised by a hash of ``(timestamp, command)`` kept in
  a bounded window in the checkpoint; entries older than anything evicted from the
  window count as seen;
- entries without a timestamp are matched by order: the rewritten file is aligned
  with the sequence last seen (first by finding the old end, else with a diff), so a
  command typed again is still new while the re-written old ones are not.

Event ids are deterministic: ``(file, timestamp, command)`` for timestamped entries,
``(file, rewrite generation, byte offset, command)`` otherwise, so a crash between
appending events and saving the checkpoint re-reads the same ids and drops them.
Two timestamped entries with the same command in the same second are one event.
"""

from __future__ import annotations

import os
import re
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from urchin import paths
from urchin.collectors.base import Collector, CollectorRun, stable_id
from urchin.collectors.tail import FileTail, SeenWindow, record_key
from urchin.event import Event, EventKind, JsonValue

__all__ = [
    "FishCollector",
    "HistoryEntry",
    "ShellCollector",
    "ZshCollector",
    "parse_bash",
    "parse_fish",
    "parse_zsh",
    "shell_collectors",
]

#: One history line longer than this is skipped (and counted), never loaded whole.
MAX_HISTORY_LINE_BYTES = 1024 * 1024
_LATEST_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One history entry: where it starts in the file, the command, and when if known."""

    offset: int
    command: str
    when: int | None = None
    elapsed: int | None = None

    @property
    def key(self) -> str:
        """A short hash of ``(when, command)``, what the seen window stores."""
        return record_key(self.when, self.command)


Parsed = tuple[list[HistoryEntry], int]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# -- bash -------------------------------------------------------------------------

_BASH_TIME = re.compile(rb"#(\d{1,15})[ \t\r]*")


def parse_bash(lines: Iterable[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
    """Group bash history lines into entries.

    ``#<epoch>`` lines start a timestamped entry. As in bash itself, a file whose
    first line is such a line is read with multi-line entries: a line with no
    timestamp before it continues the previous entry. ``end`` is where reading
    stopped; the second value returned is where the next read must start (before a
    trailing timestamp line whose command is not written yet).
    """
    multiline = head[:1] == b"#" and head[1:2].isdigit()
    entries: list[HistoryEntry] = []
    current: tuple[int, int | None, list[bytes]] | None = None
    stamp: tuple[int, int] | None = None  # (offset of the #line, epoch)

    def flush() -> None:
        if current is not None:
            offset, when, parts = current
            entries.append(HistoryEntry(offset, _decode(b"\n".join(parts)), when))

    for offset, line in lines:
        match = _BASH_TIME.fullmatch(line)
        if match:
            flush()
            current = None
            stamp = (offset, int(match[1]))
            continue
        if stamp is None and multiline and current is not None:
            current[2].append(line)
            continue
        flush()
        if stamp is not None:
            current = (stamp[0], stamp[1], [line])
            stamp = None
        else:
            current = (offset, None, [line])
    flush()
    return entries, end if stamp is None else stamp[0]


# -- zsh --------------------------------------------------------------------------

_ZSH_EXTENDED = re.compile(rb": *(\d{1,15}):(\d{1,15});(.*)", re.DOTALL)
_ZSH_META = 0x83
_ZSH_ESCAPED_SPACE = re.compile(rb"\\ +\Z")


def unmetafy(data: bytes) -> bytes:
    """Undo zsh's metafication: ``0x83`` followed by a byte XOR ``0x20``."""
    if _ZSH_META not in data:
        return data
    out = bytearray()
    index = 0
    while index < len(data):
        byte = data[index]
        if byte == _ZSH_META and index + 1 < len(data):
            out.append(data[index + 1] ^ 0x20)
            index += 2
        else:
            out.append(byte)
            index += 1
    return bytes(out)


def parse_zsh(lines: Iterable[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
    """Read zsh history, plain or with EXTENDED_HISTORY (``: <start>:<elapsed>;<cmd>``).

    A line ending in a backslash continues on the next line (zsh's encoding of an
    embedded newline). An entry still open at ``end`` is held back.
    """
    del head
    entries: list[HistoryEntry] = []
    start: int | None = None
    parts: list[bytes] = []
    for offset, line in lines:
        if start is None:
            start = offset
        if line.endswith(b"\\"):
            parts.append(line[:-1])
            continue
        # zsh writes a command ending in a backslash with a space after it.
        if _ZSH_ESCAPED_SPACE.search(line):
            line = line[:-1]
        parts.append(line)
        entries.append(_zsh_entry(start, unmetafy(b"\n".join(parts))))
        start, parts = None, []
    return entries, end if start is None else start


def _zsh_entry(offset: int, data: bytes) -> HistoryEntry:
    match = _ZSH_EXTENDED.fullmatch(data)
    if match is None:
        return HistoryEntry(offset, _decode(data))
    return HistoryEntry(offset, _decode(match[3]), int(match[1]), int(match[2]))


# -- fish -------------------------------------------------------------------------

_FISH_CMD = b"- cmd:"
_FISH_WHEN = b"when:"


def fish_unescape(text: bytes) -> bytes:
    """Decode fish's history escapes: only ``\\\\`` and ``\\n``; others stay as written."""
    if b"\\" not in text:
        return text
    out = bytearray()
    index = 0
    while index < len(text):
        byte = text[index : index + 1]
        follow = text[index + 1 : index + 2]
        if byte == b"\\" and follow in (b"\\", b"n"):
            out += b"\\" if follow == b"\\" else b"\n"
            index += 2
        else:
            out += byte
            index += 1
    return bytes(out)


def parse_fish(lines: Iterable[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
    """Read fish history by line prefix (it is not valid YAML).

    ``- cmd:`` starts an entry; ``when:`` gives its time at any indentation (older fish
    wrote three spaces, as fish's own reader accepts); ``paths:`` and unknown lines are
    ignored. The last entry is held back only while nothing follows its ``- cmd:``
    line, since fish may still be writing the rest of it.
    """
    del head
    entries: list[HistoryEntry] = []
    current: tuple[int, bytes] | None = None
    when: int | None = None
    followed = False
    for offset, line in lines:
        if line.startswith(_FISH_CMD):
            if current is not None:
                entries.append(HistoryEntry(current[0], _decode(current[1]), when))
            current, when = (offset, fish_unescape(line[len(_FISH_CMD) :].lstrip(b" "))), None
            followed = False
            continue
        if current is None:
            continue
        followed = True
        field = line.lstrip(b" \t")
        if field.startswith(_FISH_WHEN) and len(field) < len(line):
            value = field[len(_FISH_WHEN) :].strip()
            when = int(value) if value.isdigit() and len(value) <= 15 else None
    if current is None:
        return entries, end
    if when is None and not followed:
        return entries, current[0]
    entries.append(HistoryEntry(current[0], _decode(current[1]), when))
    return entries, end


# -- collectors ---------------------------------------------------------------------


def _from_epoch(when: int | None) -> datetime | None:
    if when is None or not 0 < when <= _LATEST_EPOCH:
        return None
    return datetime.fromtimestamp(when, UTC)


class _HistoryCollector(Collector):
    """A shell history file read with a byte checkpoint and a seen window."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @abstractmethod
    def parse(self, lines: list[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
        """Entries in ``lines`` and the offset the next read starts from."""

    def available(self) -> bool:
        # Not a regular file (HISTFILE=/dev/null, a folder): nothing to collect.
        return self.path.is_file()

    def collect(self, run: CollectorRun) -> None:
        """Emit entries added since the checkpoint, or unseen ones after a rewrite.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        key = str(self.path)
        files = run.state.get("files")
        files = dict(files) if isinstance(files, dict) else {}
        saved = files.get(key)
        saved = saved if isinstance(saved, dict) else {}
        window = SeenWindow.from_json(saved.get("seen"))
        generation = saved.get("generation")
        generation = generation if isinstance(generation, int) else 0
        try:
            with FileTail(
                self.path, saved.get("file"), max_line_bytes=MAX_HISTORY_LINE_BYTES
            ) as tail:
                entries, resume = self.parse(list(tail.lines()), tail.head, tail.position)
                checkpoint = tail.checkpoint(resume)
        except FileNotFoundError:
            return  # removed since available(): nothing to read
        except OSError as exc:
            run.error(f"cannot read {self.path}: {exc.strerror or type(exc).__name__}")
            return
        records = [(entry.key, entry.when) for entry in entries]
        # A checkpoint whose file part is unusable still has a window worth using.
        reread = tail.replaced or (tail.first and bool(saved))
        if reread:
            generation += 1
            fresh = [entries[i] for i in window.select_new(records)]
        else:
            fresh = entries
        fallback = datetime.fromtimestamp(tail.mtime, UTC)
        events = [
            self._event(entry, generation, fallback) for entry in fresh if entry.command.strip()
        ]
        run.emit(events)
        run.skip(len(entries) - len(events) + tail.oversized)
        window.remember(records, whole_file=reread or tail.first)
        state = {"file": checkpoint, "generation": generation, "seen": window.to_json()}
        if state != saved or events:
            files[key] = state
            run.save({**run.state, "files": files})

    def _event(self, entry: HistoryEntry, generation: int, fallback: datetime) -> Event:
        if entry.when is not None:
            event_id = stable_id(self.name, str(self.path), "t", str(entry.when), entry.command)
        else:
            event_id = stable_id(
                self.name, str(self.path), "o", str(generation), str(entry.offset), entry.command
            )
        meta: dict[str, JsonValue] | None = None
        if entry.elapsed:
            meta = {"duration_secs": entry.elapsed}
        return Event.create(
            entry.command,
            self.name,
            EventKind.COMMAND,
            timestamp=_from_epoch(entry.when) or fallback,
            event_id=event_id,
            meta=meta,
        )


def _histfile(env: Mapping[str, str], shell: str) -> Path | None:
    """``$HISTFILE`` when it is absolute and plausibly this shell's file."""
    value = env.get("HISTFILE", "")
    if not value or not os.path.isabs(value):
        return None
    name = os.path.basename(value).lower()
    # The collectors run outside the user's shell and may inherit another shell's HISTFILE.
    others = {"bash": ("zsh", "fish"), "zsh": ("bash", "fish")}[shell]
    if any(other in name for other in others):
        return None
    if shell == "zsh" and "zsh" not in name:
        return None
    return Path(value)


class ShellCollector(_HistoryCollector):
    """bash history: ``$HISTFILE`` or ``~/.bash_history``."""

    name = "shell"

    def __init__(self, path: Path | None = None, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        super().__init__(path or _histfile(env, "bash") or paths.home_dir(env) / ".bash_history")

    def parse(self, lines: list[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
        return parse_bash(lines, head, end)


class ZshCollector(_HistoryCollector):
    """zsh history: ``$HISTFILE`` if it names a zsh file, else ``$ZDOTDIR/.zsh_history``."""

    name = "zsh"

    def __init__(self, path: Path | None = None, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        zdotdir = env.get("ZDOTDIR", "")
        folder = Path(zdotdir) if os.path.isabs(zdotdir) else paths.home_dir(env)
        super().__init__(path or _histfile(env, "zsh") or folder / ".zsh_history")

    def parse(self, lines: list[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
        return parse_zsh(lines, head, end)


class FishCollector(_HistoryCollector):
    """fish history: ``$XDG_DATA_HOME/fish/fish_history``."""

    name = "fish"

    def __init__(self, path: Path | None = None, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        # data_dir() is $XDG_DATA_HOME/urchin; fish lives beside it.
        super().__init__(path or paths.data_dir(env).parent / "fish" / "fish_history")

    def parse(self, lines: list[tuple[int, bytes]], head: bytes, end: int) -> Parsed:
        return parse_fish(lines, head, end)


def shell_collectors(env: Mapping[str, str] | None = None) -> list[Collector]:
    """The bash, zsh and fish collectors at their default paths."""
    return [ShellCollector(env=env), ZshCollector(env=env), FishCollector(env=env)]
