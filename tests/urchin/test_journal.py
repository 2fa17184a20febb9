from __future__ import annotations

import json
import multiprocessing
import os
import random
import threading
from collections import Counter
from pathlib import Path

import pytest

import urchin.journal as journal_module
from urchin.errors import JournalWriteError
from urchin.event import Event
from urchin.journal import Journal

WORKERS = 8
PER_WORKER = 2_000


def _sizes(seed: int, count: int) -> list[int]:
    rng = random.Random(seed)
    # Mostly small lines, with one in twenty far beyond PIPE_BUF (64 KiB).
    return [64 * 1024 if rng.random() < 0.05 else rng.randint(100, 4096) for _ in range(count)]


def _append_worker(path: str, worker: int) -> None:
    journal = Journal(path)
    for seq, size in enumerate(_sizes(worker, PER_WORKER)):
        marker = f"w{worker}-s{seq}|"
        journal.append(Event.create(marker + "x" * max(1, size - 200), "stress"))
    journal.close()


def test_concurrent_processes_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_worker, args=(str(path), w)) for w in range(WORKERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0

    raw_lines = path.read_bytes().split(b"\n")
    assert raw_lines[-1] == b""
    markers = Counter()
    for raw in raw_lines[:-1]:
        event = Event.from_line(raw)  # every single line parses
        markers[event.content.split("|", 1)[0]] += 1
    assert len(raw_lines) - 1 == WORKERS * PER_WORKER
    assert len(markers) == WORKERS * PER_WORKER
    assert set(markers.values()) == {1}


def test_concurrent_threads_share_one_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")

    def work(worker: int) -> None:
        for seq in range(300):
            journal.append(Event.create(f"t{worker}-{seq}" + "y" * 70_000 * (seq % 7 == 0), "t"))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    scan = journal.scan()
    contents = [entry.event.content[:12].rstrip("y") for entry in scan]
    assert len(contents) == 2_400 == len(set(contents))
    assert scan.stats.malformed == 0


def _write(path: Path, *chunks: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        for chunk in chunks:
            handle.write(chunk)


def test_torn_tail_is_not_read_and_later_appends_stay_parseable(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first, second = Event.create("one", "s"), Event.create("two", "s")
    _write(path, first.to_line(), second.to_line(), b'{"id":"torn-by-a-cra')
    scan = Journal(path).scan()
    assert [e.event.content for e in scan] == ["one", "two"]
    assert scan.stats.torn_tail
    assert scan.stats.end_offset == len(first.to_line()) + len(second.to_line())

    journal = Journal(path)
    journal.append(Event.create("three", "s"))
    journal.append(Event.create("four", "s"))
    scan = journal.scan()
    assert [e.event.content for e in scan] == ["one", "two", "three", "four"]
    assert scan.stats.malformed == 1  # the fragment became one skipped line
    assert not scan.stats.torn_tail
    assert path.read_bytes().endswith(b"\n")


def test_torn_tail_left_by_another_process_is_detected_by_a_long_lived_writer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    journal = Journal(path)
    journal.append(Event.create("one", "s"))
    _write(path, b'{"half a line')  # another writer crashes mid-line
    journal.append(Event.create("two", "s"))
    assert [e.event.content for e in journal.scan()] == ["one", "two"]


def test_garbage_invalid_utf8_and_blank_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    good = Event.create("good", "s").to_line()
    _write(path, good, b"garbage\n", b"\n", b"\xff\xfe\xfd\n", b'{"id":1}\n', good)
    scan = Journal(path).scan()
    assert [e.event.content for e in scan] == ["good", "good"]
    assert scan.stats.malformed == 3
    assert scan.stats.events == 2
    assert path.read_bytes().count(b"\n") == 6  # reading never rewrites


def test_five_megabyte_line_reads_fine(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    journal = Journal(path)
    journal.append(Event.create("z" * 5_000_000, "big"))
    journal.append(Event.create("after", "s"))
    contents = [len(e.event.content) for e in journal.scan()]
    assert contents == [5_000_000, 5]


def test_lines_over_the_cap_are_skipped_without_losing_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "MAX_LINE_BYTES", 1_000)
    path = tmp_path / "events.jsonl"
    journal = Journal(path)
    journal.append(Event.create("q" * 5_000, "big"))
    journal.append(Event.create("small", "s"))
    scan = journal.scan()
    assert [e.event.content for e in scan] == ["small"]
    assert scan.stats.oversized == 1
    assert scan.stats.end_offset == path.stat().st_size


def test_scan_resumes_from_a_byte_offset(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    journal.append(Event.create("a", "s"))
    first = journal.scan()
    assert [e.event.content for e in first] == ["a"]
    journal.append(Event.create("b", "s"))
    journal.append(Event.create("c", "s"))
    rest = journal.scan(first.stats.end_offset)
    entries = list(rest)
    assert [e.event.content for e in entries] == ["b", "c"]
    assert entries[0].offset == first.stats.end_offset
    assert rest.stats.end_offset == journal.size()


def test_missing_journal_reads_as_empty_and_first_write_creates_folders(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "events.jsonl"
    journal = Journal(path, durable=True)
    assert list(journal.scan()) == []
    assert journal.size() == 0
    journal.append(Event.create("first", "s"))
    assert path.exists()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_unwritable_location_raises_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("file", encoding="utf-8")
    journal = Journal(blocker / "events.jsonl")
    with pytest.raises(JournalWriteError, match="cannot append to the journal"):
        journal.append(Event.create("x", "s"))


def test_writer_follows_a_deleted_journal(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    journal = Journal(path)
    journal.append(Event.create("old", "s"))
    os.unlink(path)
    journal.append(Event.create("new", "s"))
    assert [e.event.content for e in journal.scan()] == ["new"]


def test_append_many_writes_contiguous_lines(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    journal.append_many([Event.create(str(i), "s") for i in range(50)])
    journal.sync()
    lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["content"] for line in lines] == [str(i) for i in range(50)]


def test_append_lines_requires_a_trailing_newline(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="newline"):
        Journal(tmp_path / "events.jsonl").append_lines(b"{}")


def test_ids_lists_whole_events_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    kept = [Event.create(str(i), "s") for i in range(3)]
    torn = Event.create("torn", "s").to_line()[:60]
    foreign = b'{"timestamp":"2026-05-04T20:00:00Z","id":"56816532-adb7-4000-8a0f-1dda8408aab5",'
    foreign += b'"source":"s","kind":"agent","content":"c"}\n'
    _write(path, kept[0].to_line(), torn + b"\n", kept[1].to_line(), foreign, kept[2].to_line())
    journal = Journal(path)
    assert journal.ids() == {str(e.id) for e in kept} | {"56816532-adb7-4000-8a0f-1dda8408aab5"}
    assert journal.ids(len(kept[0].to_line())) >= {str(kept[1].id), str(kept[2].id)}
    assert Journal(tmp_path / "missing.jsonl").ids() == set()
