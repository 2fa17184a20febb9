"""The start report between a daemon and its launcher, with stand-in children."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memories.daemon.startup import wait_until_ready
from memories.errors import BusyError, MemoriesError, UsageError


def _child(code: str) -> tuple[int, subprocess.Popen[bytes]]:
    """Start ``code`` with the write end of a status pipe as fd ``W``; returns the read end."""
    read_fd, write_fd = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", f"import os, sys\nW = {write_fd}\n{code}"],
            pass_fds=(write_fd,),
        )
    finally:
        os.close(write_fd)
    return read_fd, process


def _wait(code: str, timeout: float = 30) -> subprocess.Popen[bytes]:
    read_fd, process = _child(code)
    try:
        wait_until_ready(read_fd, process, timeout=timeout, log_path=Path("/x/daemon.log"))
    finally:
        os.close(read_fd)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    return process


def test_a_ready_record_returns() -> None:
    _wait('os.write(W, b\'{"ok":true,"pid":1}\\n\')')


def test_a_reported_error_is_raised_as_its_class_and_the_child_is_reaped() -> None:
    record = '{"ok":false,"error":{"code":"busy","message":"the store is in use by PID 7"}}'
    with pytest.raises(BusyError, match="in use by PID 7") as caught:
        _wait(f"os.write(W, b'{record}\\n'); sys.exit(1)")
    assert caught.value.exit_code == 1
    usage = '{"ok":false,"error":{"code":"invalid_input","message":"newer release"}}'
    with pytest.raises(UsageError, match="newer release"):
        _wait(f"os.write(W, b'{usage}\\n'); sys.exit(2)")


def test_a_child_that_dies_silently_names_its_exit_status_and_log() -> None:
    expected = r"exited at start \(exit status 3\); see /x/daemon.log"
    with pytest.raises(MemoriesError, match=expected):
        _wait("sys.exit(3)")


def test_a_garbled_record_is_not_trusted() -> None:
    with pytest.raises(MemoriesError, match="exited at start") as caught:
        _wait('os.write(W, b\'{"ok":false,"error":"no"}\\n\'); sys.exit(1)')
    assert type(caught.value) is MemoriesError


def test_a_child_that_never_reports_is_stopped_at_the_deadline() -> None:
    read_fd, process = _child("import time\nwhile True: time.sleep(1)")
    try:
        with pytest.raises(MemoriesError, match="did not start within 1s"):
            wait_until_ready(read_fd, process, timeout=1, log_path=Path("/x/daemon.log"))
        assert process.poll() is not None  # terminated and reaped
    finally:
        os.close(read_fd)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
