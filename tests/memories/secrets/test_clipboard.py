"""The clipboard on a real X server (Xvfb) through the real xclip."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memories.errors import UnavailableError, UsageError
from memories.secrets import clipboard
from memories.secrets.clipboard import clear_if_unchanged, copy, find_tool, read, schedule_clear
from tests.memories.secrets import xserver
from tests.support import wait_for

x_display = xserver.x_display  # the fixture, under its own name

CANARY = "canary-clipboard-4b1f9e02"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return state.rpartition(")")[2].split()[:1] != ["Z"]


def _reap(pid: int) -> bool:
    # The helper is detached but still our child here: reap it once it has exited.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not _alive(pid)
    return done == pid


def test_copy_puts_the_value_on_the_clipboard_and_reads_it_back(x_display: str) -> None:
    tool = find_tool()
    assert tool.name == "xclip"
    copy(tool, CANARY)
    assert read(tool) == CANARY
    # What another program sees, through xclip itself.
    seen = subprocess.run(
        ["xclip", "-selection", "clipboard", "-out"], capture_output=True, timeout=10, check=True
    )
    assert seen.stdout.decode() == CANARY


def test_clear_empties_only_a_clipboard_that_still_holds_our_value(x_display: str) -> None:
    tool = find_tool()
    key = os.urandom(32)
    mac = clipboard._mac(key, CANARY)
    copy(tool, "something the user copied since")
    assert clear_if_unchanged(tool, key, mac) is False
    assert read(tool) == "something the user copied since"
    copy(tool, CANARY)
    assert clear_if_unchanged(tool, key, mac) is True
    assert read(tool) == ""


def test_the_helper_clears_after_the_delay(x_display: str) -> None:
    tool = find_tool()
    copy(tool, CANARY)
    helper = schedule_clear(tool, CANARY, 1)
    wait_for(lambda: read(tool) == "", timeout=20)
    wait_for(lambda: _reap(helper), timeout=20)
    # The helper was given an HMAC over a pipe, never the value on its command line.
    assert (
        not Path(f"/proc/{helper}").exists()
        or CANARY.encode() not in Path(f"/proc/{helper}/cmdline").read_bytes()
    )


def test_the_helper_leaves_a_newer_value_alone(x_display: str) -> None:
    tool = find_tool()
    copy(tool, CANARY)
    helper = schedule_clear(tool, CANARY, 1)
    cmdline = Path(f"/proc/{helper}/cmdline").read_bytes()
    assert CANARY.encode() not in cmdline
    copy(tool, "newer")
    wait_for(lambda: _reap(helper), timeout=20)
    assert read(tool) == "newer"


def test_a_bad_clear_time_is_refused(x_display: str) -> None:
    with pytest.raises(UsageError, match="1 to"):
        schedule_clear(find_tool(), CANARY, 0)


def test_no_session_or_no_tool_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="DISPLAY"):
        find_tool({"PATH": str(tmp_path)})
    with pytest.raises(UnavailableError, match="xclip or xsel") as caught:
        find_tool({"PATH": str(tmp_path), "DISPLAY": ":99"})
    assert "nothing was copied" in caught.value.message
