"""The local-model collector against a realistic, partly broken JSONL log."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CheckpointStore
from urchin.collectors.local_model import LocalModelCollector, parse_record
from urchin.ephemeral import Ephemeral
from urchin.errors import MalformedEventError, UrchinError
from urchin.event import Event, EventKind


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    folder = isolated_home / ".local" / "share" / "urchin"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def source(data_dir: Path) -> Path:
    return data_dir / "local-model.jsonl"


def line(**fields: Any) -> bytes:
    return json.dumps(fields).encode() + b"\n"


FIXTURE = (
    line(
        prompt="Explain the borrow checker",
        model="llama3:8b",
        ts="2026-05-04T20:00:00Z",
        workspace="/home/u/rust-app",
        response="It tracks lifetimes.",
    )
    + line(prompt="Summarise this diff", ts=1_780_000_000)
    + b"this is not json, maybe a password=hunter2\n"
    + b"[1, 2, 3]\n"
    + line(model="no-prompt")
    + b"\n"
    + line(prompt="Milliseconds work too", ts=1_780_000_000_500, model="qwen")
    + b'{"prompt": "half writ'
)


def collect(data_dir: Path, store: CheckpointStore | None = None, **kwargs: Any) -> Any:
    return run_once(LocalModelCollector(**kwargs), data_dir, store)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def prompts(data_dir: Path) -> list[str]:
    return [event.content.split("\n\n")[0] for event in events(data_dir)]


def test_default_source_is_in_the_data_folder(data_dir: Path) -> None:
    assert LocalModelCollector().path == data_dir / "local-model.jsonl"


def test_first_run_reads_good_lines_and_counts_bad_ones(data_dir: Path, source: Path) -> None:
    source.write_bytes(FIXTURE)

    result = collect(data_dir)

    got = events(data_dir)
    assert [e.content for e in got] == [
        "Explain the borrow checker\n\nIt tracks lifetimes.",
        "Summarise this diff",
        "Milliseconds work too",
    ]
    first, second, third = got
    assert first.source == "local-model" and first.kind is EventKind.CONVERSATION
    assert first.title == "llama3:8b" and first.workspace == "/home/u/rust-app"
    assert first.timestamp == datetime(2026, 5, 4, 20, tzinfo=UTC)
    assert second.timestamp == datetime.fromtimestamp(1_780_000_000, UTC)
    assert second.title is None and second.workspace is None
    assert third.timestamp == datetime.fromtimestamp(1_780_000_000.5, UTC)
    assert result.new == 3 and result.skipped == 3
    assert len(result.errors) == 1
    assert "3 malformed lines" in result.errors[0]
    assert "hunter2" not in result.errors[0]


def test_torn_tail_is_read_once_it_is_complete(data_dir: Path, source: Path) -> None:
    source.write_bytes(FIXTURE)
    collect(data_dir)

    with source.open("ab") as handle:
        handle.write(b'ten", "model": "phi3"}\n')
    result = collect(data_dir)

    assert result.new == 1 and result.errors == []
    assert events(data_dir)[-1].content == "half written"
    assert events(data_dir)[-1].title == "phi3"


def test_rerun_emits_nothing(data_dir: Path, source: Path) -> None:
    source.write_bytes(line(prompt="once", ts=1_780_000_000))
    collect(data_dir)

    result = collect(data_dir)

    assert (result.new, result.errors) == (0, [])
    assert prompts(data_dir) == ["once"]


def test_repeated_prompt_without_time_is_two_events(data_dir: Path, source: Path) -> None:
    source.write_bytes(line(prompt="continue"))
    os.utime(source, (1_780_000_000, 1_780_000_000))
    collect(data_dir)
    with source.open("ab") as handle:
        handle.write(line(prompt="continue"))

    collect(data_dir)

    got = events(data_dir)
    assert [e.content for e in got] == ["continue", "continue"]
    assert got[0].id != got[1].id
    assert got[0].timestamp == datetime.fromtimestamp(1_780_000_000, UTC)


def test_crash_between_append_and_checkpoint_loses_and_duplicates_nothing(
    data_dir: Path, source: Path
) -> None:
    source.write_bytes(line(prompt="one"))
    collect(data_dir)
    with source.open("ab") as handle:
        handle.write(line(prompt="two") + line(prompt="three"))

    class DiskFull(CheckpointStore):
        def save(self, name: str, state: dict[str, Any]) -> None:
            raise UrchinError("cannot write checkpoint: No space left on device")

    crashed = collect(data_dir, DiskFull(data_dir))
    assert crashed.new == 2 and crashed.errors
    with source.open("ab") as handle:
        handle.write(line(prompt="four"))

    recovered = collect(data_dir)

    assert recovered.errors == [] and recovered.new == 1
    assert prompts(data_dir) == ["one", "two", "three", "four"]


def test_restoring_an_older_checkpoint_duplicates_nothing(data_dir: Path, source: Path) -> None:
    source.write_bytes(line(prompt="one"))
    collect(data_dir)
    path = CheckpointStore(data_dir).path("local-model")
    older = path.read_bytes()
    with source.open("ab") as handle:
        handle.write(line(prompt="two"))
    collect(data_dir)

    path.write_bytes(older)
    assert collect(data_dir).new == 0
    assert prompts(data_dir) == ["one", "two"]


def test_truncated_log_is_read_from_the_start(data_dir: Path, source: Path) -> None:
    source.write_bytes(line(prompt="old one", ts=1) + line(prompt="old two", ts=2))
    collect(data_dir)

    with source.open("wb") as handle:  # same inode, emptied and restarted
        handle.write(line(prompt="fresh", ts=3))
    result = collect(data_dir)

    assert result.new == 1
    assert prompts(data_dir) == ["old one", "old two", "fresh"]


def test_replaced_log_with_old_lines_emits_only_the_new_ones(data_dir: Path, source: Path) -> None:
    old = [line(prompt=f"prompt {i}", ts=1_780_000_000 + i) for i in range(5)]
    untimed = line(prompt="no time")
    source.write_bytes(b"".join(old) + untimed)
    collect(data_dir)

    replacement = source.with_name("local-model.jsonl.new")
    replacement.write_bytes(b"".join(old[2:]) + untimed + line(prompt="after the move", ts=9))
    os.replace(replacement, source)
    result = collect(data_dir)

    assert result.new == 1
    assert prompts(data_dir)[-1] == "after the move"
    assert collect(data_dir).new == 0


def test_huge_line_is_skipped_without_stopping_the_rest(data_dir: Path, source: Path) -> None:
    huge = line(prompt="x" * (5 * 1024 * 1024))
    source.write_bytes(line(prompt="before") + huge + line(prompt="after"))

    result = collect(data_dir)

    assert prompts(data_dir) == ["before", "after"]
    assert result.skipped == 1
    assert result.errors == [f"{source}: skipped 1 line over 4 MiB"]


def test_unreadable_log_reports_an_error_and_keeps_the_checkpoint(
    data_dir: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source.write_bytes(line(prompt="one"))
    collect(data_dir)
    path = CheckpointStore(data_dir).path("local-model")
    before = path.read_bytes()
    with source.open("ab") as handle:
        handle.write(line(prompt="two"))
    source.chmod(0)
    if os.geteuid() == 0:  # root reads through permission bits; refuse the open instead
        real_open = os.open

        def guarded(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if os.fspath(file) == str(source):
                raise PermissionError(13, "Permission denied", str(source))
            return real_open(file, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", guarded)

    result = collect(data_dir)

    assert result.new == 0
    assert result.errors == [f"cannot read {source}: Permission denied"]
    assert path.read_bytes() == before


def test_missing_log_is_a_no_op(data_dir: Path) -> None:
    result = collect(data_dir)

    assert result.available is False and result.errors == []
    assert not (data_dir / "checkpoints").exists()


def test_ephemeral_mode_drops_lines_for_good(data_dir: Path, source: Path) -> None:
    source.write_bytes(line(prompt="private"))
    Ephemeral(data_dir).start()

    result = collect(data_dir)
    Ephemeral(data_dir).end()
    again = collect(data_dir)

    assert result.dropped == 1 and again.new == 0
    assert events(data_dir) == []


@pytest.mark.parametrize(
    "raw",
    [b"\xff\xfe", b"null", b'{"prompt": "   "}', b'{"prompt": 42}', b'"just a string"'],
)
def test_parse_record_rejects_malformed_lines(raw: bytes) -> None:
    with pytest.raises(MalformedEventError):
        parse_record(raw)


def test_parse_record_ignores_mistyped_optional_fields() -> None:
    record = parse_record(b'{"prompt": "hi", "model": 3, "ts": "yesterday", "workspace": []}')

    assert (record.prompt, record.model, record.timestamp, record.workspace) == (
        "hi",
        None,
        None,
        None,
    )
