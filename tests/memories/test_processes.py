"""Process facts: liveness, and start times that tell a recycled pid apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memories.processes import alive, process_start_time

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _fake_stat(proc: Path, pid: int, command: str, starttime: str) -> None:
    # Fields 3..21 are filler; field 22 is the start time.
    filler = " ".join(["S", *["0"] * 18])
    (proc / str(pid)).mkdir()
    (proc / str(pid) / "stat").write_text(
        f"{pid} ({command}) {filler} {starttime} 0 0\n", encoding="ascii"
    )


@linux_only
def test_a_process_started_later_has_a_later_start_time() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        mine = process_start_time(os.getpid())
        theirs = process_start_time(child.pid)
        assert mine is not None and theirs is not None
        assert theirs >= mine
        assert process_start_time(child.pid) == theirs  # stable while it runs
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def test_the_start_time_is_field_22_even_when_the_name_has_spaces(tmp_path: Path) -> None:
    _fake_stat(tmp_path, 4242, "a) (b c", "987654")
    assert process_start_time(4242, proc=tmp_path) == 987654


def test_the_same_pid_with_another_start_time_is_another_process(tmp_path: Path) -> None:
    first, second = tmp_path / "boot1", tmp_path / "boot2"
    first.mkdir()
    second.mkdir()
    _fake_stat(first, 300, "sh", "1000")
    _fake_stat(second, 300, "sh", "5000")
    assert process_start_time(300, proc=first) != process_start_time(300, proc=second)


def test_no_start_time_for_a_missing_or_garbled_stat(tmp_path: Path) -> None:
    assert process_start_time(77, proc=tmp_path) is None
    (tmp_path / "78").mkdir()
    (tmp_path / "78" / "stat").write_text("78 (short) S 1 2\n", encoding="ascii")
    assert process_start_time(78, proc=tmp_path) is None
    _fake_stat(tmp_path, 79, "x", "not-a-number")
    assert process_start_time(79, proc=tmp_path) is None


def test_a_reaped_child_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=10)
    assert alive(os.getpid())
    assert not alive(child.pid)
