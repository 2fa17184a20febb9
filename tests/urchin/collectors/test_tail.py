"""Byte-offset tailing and the seen window that the line-based collectors share."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from urchin.collectors.tail import WINDOW, FileTail, SeenWindow, iter_new_lines, record_key


def drain(path: Path, checkpoint: dict[str, Any] | None) -> tuple[list[bytes], dict[str, Any]]:
    lines: list[bytes] = []
    reader = iter_new_lines(path, checkpoint)
    while True:
        try:
            lines.append(next(reader)[1])
        except StopIteration as stop:
            result: dict[str, Any] = stop.value
            return lines, result


def test_iter_new_lines_stops_before_a_torn_tail_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')

    lines, checkpoint = drain(path, None)
    assert lines == [b'{"a":1}', b'{"b":2}']
    assert checkpoint["offset"] == 16 and checkpoint["inode"] == path.stat().st_ino

    with path.open("ab") as handle:
        handle.write(b"3}\n")
    lines, checkpoint = drain(path, checkpoint)
    assert lines == [b'{"c":3}']
    assert drain(path, checkpoint)[0] == []


def test_replacement_is_detected_by_inode_size_and_content(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"one\ntwo\n")
    _, checkpoint = drain(path, None)

    tmp = tmp_path / "log.new"
    tmp.write_bytes(b"one\ntwo\nthree\n")
    os.replace(tmp, path)
    with FileTail(path, checkpoint) as tail:
        assert (tail.replaced, tail.reason, tail.start) == (True, "inode", 0)
        assert [line for _, line in tail.lines()] == [b"one", b"two", b"three"]
        checkpoint = tail.checkpoint()

    path.write_bytes(b"x\n")
    with FileTail(path, checkpoint) as tail:
        assert tail.reason == "truncated"

    path.write_bytes(b"ONE\ntwo\nthree\nfour\n")
    with FileTail(path, checkpoint) as tail:
        assert tail.reason == "rewritten"


def test_oversized_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"short\n" + b"y" * 100 + b"\nalso short\n" + b"z" * 100)

    with FileTail(path, None, max_line_bytes=64) as tail:
        lines = [line for _, line in tail.lines()]
        assert lines == [b"short", b"also short"]
        assert tail.oversized == 1 and tail.torn
        assert tail.checkpoint()["offset"] == 6 + 101 + 11


def test_checkpoint_can_hold_back_an_incomplete_record(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"a\nb\n")
    with FileTail(path, None) as tail:
        offsets = [offset for offset, _ in tail.lines()]
        held = tail.checkpoint(offsets[-1])
        with pytest.raises(ValueError, match="outside"):
            tail.checkpoint(99)
    assert drain(path, held)[0] == [b"b"]


def test_unusable_checkpoint_reads_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"a\n")
    with FileTail(path, {"inode": "x"}) as tail:
        assert tail.first and not tail.replaced
        assert [line for _, line in tail.lines()] == [b"a"]


def test_seen_window_keeps_repeats_after_the_old_end() -> None:
    old = [(record_key(None, c), None) for c in ["ls", "make", "ls", "git status"]]
    window = SeenWindow()
    window.remember(old, whole_file=True)
    window = SeenWindow.from_json(window.to_json())

    new = [(record_key(None, c), None) for c in ["make", "ls", "git status", "ls"]]
    assert window.select_new(new) == [3]


def test_seen_window_evicts_oldest_timed_keys_and_remembers_the_floor() -> None:
    window = SeenWindow()
    window.remember([(record_key(t, "cmd"), t) for t in range(WINDOW + 10)], whole_file=True)

    assert len(window.timed) == WINDOW and window.floor == 9
    evicted_again = [(record_key(5, "cmd"), 5), (record_key(99999, "cmd"), 99999)]
    assert window.select_new(evicted_again) == [1]
