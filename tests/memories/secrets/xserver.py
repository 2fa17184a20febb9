"""A private X server (Xvfb) for clipboard tests, and the clipboard helpers it leaves behind.

Xvfb picks a free display number itself (``-displayfd``) and listens on no TCP port. Tests
that need it skip with the reason when Xvfb or xclip is missing on a developer machine; under
CI (``CI=true``) a missing binary fails the test instead, because there `.ci/run` installs both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import kill_processes, require_tools, wait_for

__all__ = ["clipboard_helpers", "require_binaries", "x_display"]


def require_binaries(*names: str) -> None:
    """Skip (or fail under CI) unless every binary in ``names`` is on PATH."""
    require_tools(*names, debian="xvfb xclip")


def clipboard_helpers(display: str) -> list[int]:
    """Pids of live clipboard clear helpers (and xclip servers) serving ``display``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = b"memories.secrets.clipboard" in cmdline or any(
            part.endswith(b"xclip") for part in cmdline[:1]
        )
        if ours and b"DISPLAY=" + display.encode() in environ:
            found.append(int(entry.name))
    return found


@contextlib.contextmanager
def _xvfb() -> Iterator[str]:
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "320x240x24"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as announced:
            number = announced.readline().strip().decode("ascii")
        assert number.isdigit(), "Xvfb did not announce a display"
        display = f":{number}"
        yield display
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def x_display(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private X display in ``DISPLAY`` for this test; its helpers are stopped afterwards."""
    require_binaries("Xvfb", "xclip")
    with _xvfb() as display:
        monkeypatch.setenv("DISPLAY", display)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        try:
            yield display
        finally:
            kill_processes(clipboard_helpers(display))
            wait_for(lambda: not clipboard_helpers(display), timeout=10)
