"""The local-model collector: prompts logged by a local model wrapper.

Source: ``local-model.jsonl`` in urchin's data folder (``~/.local/share/urchin/``),
one JSON object per line: ``{"prompt": str, "model"?: str, "ts"?: RFC 3339 string
or epoch seconds/milliseconds, "workspace"?: str, "response"?: str}``.

Each line becomes one ``conversation`` event with source ``local-model``: the
content is the prompt, followed by a blank line and the response when the line
has one (so searching finds either); the title is the model; the timestamp is
``ts``, or the file's modification time when ``ts`` is missing or unreadable.

The file is read from a byte checkpoint (see :mod:`urchin.collectors.tail`): an
unterminated last line is read again next time, lines over 4 MiB are skipped
without being loaded, and malformed lines are counted as skipped and reported
once (by byte offset, never by content). If the file is replaced or truncated it
is read again from the start and a window of line hashes keeps old lines from
being emitted twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin import paths
from urchin.collectors.base import Collector, CollectorRun, stable_id
from urchin.collectors.tail import FileTail, SeenWindow, record_key
from urchin.errors import MalformedEventError
from urchin.event import Event, EventKind, parse_timestamp

__all__ = ["MAX_LINE_BYTES", "LocalModelCollector", "LocalModelRecord", "parse_record"]

#: Lines longer than this are skipped (and counted) without being held in memory.
MAX_LINE_BYTES = 4 * 1024 * 1024
FILE_NAME = "local-model.jsonl"
# Epoch values above this are milliseconds (it is the year 5138 in seconds).
_MILLIS_THRESHOLD = 100_000_000_000
_LATEST_EPOCH = 253_402_300_799


class LocalModelRecord:
    """One parsed line."""

    __slots__ = ("model", "prompt", "response", "timestamp", "workspace")

    def __init__(
        self,
        prompt: str,
        model: str | None = None,
        timestamp: datetime | None = None,
        workspace: str | None = None,
        response: str | None = None,
    ) -> None:
        self.prompt = prompt
        self.model = model
        self.timestamp = timestamp
        self.workspace = workspace
        self.response = response

    @property
    def content(self) -> str:
        if self.response and self.response.strip():
            return f"{self.prompt}\n\n{self.response}"
        return self.prompt


def _optional_text(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _timestamp(value: object) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > _MILLIS_THRESHOLD else value
        if not 0 < seconds <= _LATEST_EPOCH:
            return None
        return datetime.fromtimestamp(seconds, UTC)
    if isinstance(value, str):
        try:
            return parse_timestamp(value)
        except MalformedEventError:
            return None
    return None


def parse_record(line: bytes) -> LocalModelRecord:
    """Parse one line. Optional fields of the wrong type are ignored.

    Raises:
        MalformedEventError: not UTF-8 JSON, not an object, or no non-blank ``prompt``.
    """
    try:
        obj = json.loads(line)
    except UnicodeDecodeError:
        raise MalformedEventError("line is not UTF-8") from None
    except ValueError:
        raise MalformedEventError("line is not JSON") from None
    if not isinstance(obj, dict):
        raise MalformedEventError("line is not a JSON object")
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise MalformedEventError("line has no prompt")
    return LocalModelRecord(
        prompt=prompt,
        model=_optional_text(obj, "model"),
        timestamp=_timestamp(obj.get("ts")),
        workspace=_optional_text(obj, "workspace"),
        response=_optional_text(obj, "response"),
    )


class LocalModelCollector(Collector):
    """Prompts (and responses) from ``local-model.jsonl``."""

    name = "local-model"

    def __init__(
        self,
        path: Path | None = None,
        env: Mapping[str, str] | None = None,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.path = path or paths.data_dir(os.environ if env is None else env) / FILE_NAME
        self.max_line_bytes = max_line_bytes

    def available(self) -> bool:
        # Not a regular file (HISTFILE=/dev/null, a folder): nothing to collect.
        return self.path.is_file()

    def collect(self, run: CollectorRun) -> None:
        """Emit the lines added since the checkpoint, or unseen ones after a replacement.

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
        parsed: list[tuple[int, str, int | None, LocalModelRecord]] = []
        malformed: list[int] = []
        try:
            with FileTail(self.path, saved.get("file"), max_line_bytes=self.max_line_bytes) as tail:
                for offset, line in tail.lines():
                    if not line.strip():
                        continue
                    try:
                        record = parse_record(line)
                    except MalformedEventError:
                        malformed.append(offset)
                        continue
                    when = None if record.timestamp is None else int(record.timestamp.timestamp())
                    line_key = record_key(when, line.decode("utf-8", "replace"))
                    parsed.append((offset, line_key, when, record))
                checkpoint = tail.checkpoint()
        except FileNotFoundError:
            return  # removed since available(): nothing to read
        except OSError as exc:
            run.error(f"cannot read {self.path}: {exc.strerror or type(exc).__name__}")
            return
        records = [(line_key, when) for _, line_key, when, _ in parsed]
        reread = tail.replaced or (tail.first and bool(saved))
        if reread:
            generation += 1
            fresh = [parsed[i] for i in window.select_new(records)]
        else:
            fresh = parsed
        fallback = datetime.fromtimestamp(tail.mtime, UTC)
        events = [
            self._event(offset, line_key, when, record, generation, fallback)
            for offset, line_key, when, record in fresh
        ]
        run.emit(events)
        run.skip(len(parsed) - len(fresh) + len(malformed) + tail.oversized)
        if malformed or tail.oversized:
            run.error(_skipped_message(self.path, malformed, tail.oversized, self.max_line_bytes))
        window.remember(records, whole_file=reread or tail.first)
        state = {"file": checkpoint, "generation": generation, "seen": window.to_json()}
        if state != saved or events:
            files[key] = state
            run.save({**run.state, "files": files})

    def _event(
        self,
        offset: int,
        key: str,
        when: int | None,
        record: LocalModelRecord,
        generation: int,
        fallback: datetime,
    ) -> Event:
        # Timed lines keep their id across a replaced file; untimed ones are told
        # apart by position, since the same prompt can be sent twice.
        if when is not None:
            event_id = stable_id(self.name, str(self.path), "t", key)
        else:
            event_id = stable_id(self.name, str(self.path), "o", str(generation), str(offset), key)
        return Event.create(
            record.content,
            self.name,
            EventKind.CONVERSATION,
            timestamp=record.timestamp or fallback,
            event_id=event_id,
            workspace=record.workspace,
            title=record.model,
        )


def _skipped_message(path: Path, malformed: list[int], oversized: int, limit: int) -> str:
    parts = []
    if malformed:
        plural = "s" if len(malformed) > 1 else ""
        parts.append(f"{len(malformed)} malformed line{plural} (first at byte {malformed[0]})")
    if oversized:
        plural = "s" if oversized > 1 else ""
        size = f"{limit // 1048576} MiB" if limit >= 1048576 else f"{limit} bytes"
        parts.append(f"{oversized} line{plural} over {size}")
    return f"{path}: skipped " + " and ".join(parts)
