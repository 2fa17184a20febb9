"""The system clipboard: write a value, read it back, and clear it later if it is still ours.

The value always travels to the clipboard tool on its standard input, never on a command line
(argv is visible to every process). Which tool is used depends on the session:

- Wayland (``WAYLAND_DISPLAY``): ``wl-copy`` / ``wl-paste``;
- X11 (``DISPLAY``): ``xclip``, else ``xsel``;
- macOS: ``pbcopy`` / ``pbpaste``;
- Windows: ``clip`` (read back with PowerShell's ``Get-Clipboard``).

:func:`copy` writes and then reads the clipboard back, so "copied" means the clipboard holds the
value. :func:`schedule_clear` starts a detached helper (``python -m memories.secrets.clipboard``)
that waits, then clears the clipboard only when it still holds the value: the helper is given
an HMAC of the value under a random key, over a pipe, and compares in constant time, so it never
holds the value itself and a value the user copied since is left alone.

Nothing here imports the vault: front ends use it on what the service delivered to them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from memories.errors import MemoriesError, UnavailableError, UsageError

__all__ = [
    "DEFAULT_CLEAR_SECONDS",
    "MAX_CLEAR_SECONDS",
    "ClipboardTool",
    "clear_if_unchanged",
    "copy",
    "find_tool",
    "read",
    "schedule_clear",
]

DEFAULT_CLEAR_SECONDS: Final = 45
MAX_CLEAR_SECONDS: Final = 24 * 3600
_TOOL_SECONDS: Final = 10.0
_READ_BACK_SECONDS: Final = 2.0  # how long a copy may take to show up on the clipboard
_MISSING: Final = (
    "no clipboard tool found: install wl-clipboard (Wayland), xclip or xsel (X11); "
    "nothing was copied"
)
_NO_SESSION: Final = (
    "no graphical session to copy to (neither WAYLAND_DISPLAY nor DISPLAY is set); "
    "nothing was copied"
)


class ClipboardError(MemoriesError):
    """The clipboard tool failed; the message names the tool, never the value."""


@dataclass(frozen=True)
class ClipboardTool:
    """The commands that write and read the clipboard (each reads or writes standard I/O)."""

    name: str
    write: tuple[str, ...]
    read: tuple[str, ...] | None
    #: The writer forks a server that keeps the selection (xclip, xsel): it must not inherit
    #: our pipes, or waiting for the writer would wait for that server too.
    forks: bool = False


def find_tool(environ: Mapping[str, str] | None = None) -> ClipboardTool:
    """The clipboard tool for this session.

    Raises:
        UnavailableError: no graphical session, or no tool installed (the message says what to
            install).
    """
    env = os.environ if environ is None else environ
    path = env.get("PATH")

    def which(name: str) -> str | None:
        return shutil.which(name, path=path)

    if sys.platform == "darwin":
        copy_tool, paste_tool = which("pbcopy"), which("pbpaste")
        if copy_tool and paste_tool:
            return ClipboardTool("pbcopy", (copy_tool,), (paste_tool,))
        raise UnavailableError("pbcopy is missing; nothing was copied")
    if sys.platform == "win32":
        clip, shell = which("clip"), which("powershell")
        if clip:
            reader = (shell, "-NoProfile", "-Command", "Get-Clipboard -Raw") if shell else None
            return ClipboardTool("clip", (clip,), reader)
        raise UnavailableError("clip.exe is missing; nothing was copied")
    wayland, x11 = env.get("WAYLAND_DISPLAY"), env.get("DISPLAY")
    if not wayland and not x11:
        raise UnavailableError(_NO_SESSION)
    if wayland:
        wl_copy, wl_paste = which("wl-copy"), which("wl-paste")
        if wl_copy and wl_paste:
            return ClipboardTool("wl-copy", (wl_copy,), (wl_paste, "--no-newline"))
    if x11:
        xclip = which("xclip")
        if xclip:
            return ClipboardTool(
                "xclip",
                (xclip, "-selection", "clipboard", "-in"),
                (xclip, "-selection", "clipboard", "-out"),
                forks=True,
            )
        xsel = which("xsel")
        if xsel:
            return ClipboardTool(
                "xsel",
                (xsel, "--clipboard", "--input"),
                (xsel, "--clipboard", "--output"),
                forks=True,
            )
    raise UnavailableError(_MISSING)


def _run(argv: tuple[str, ...], tool: ClipboardTool, data: bytes | None, forks: bool) -> bytes:
    try:
        done = subprocess.run(
            argv,
            input=data if data is not None else b"",
            stdout=subprocess.DEVNULL if forks else subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=_TOOL_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClipboardError(f"{tool.name} could not be run ({type(exc).__name__})") from exc
    if done.returncode != 0:
        raise ClipboardError(f"{tool.name} failed (exit status {done.returncode})")
    return done.stdout or b""


def read(tool: ClipboardTool) -> str | None:
    """What the clipboard holds now as text, or None when the tool cannot read it back.

    An empty or non-text clipboard reads as ``""``.
    """
    if tool.read is None:
        return None
    try:
        raw = _run(tool.read, tool, None, forks=False)
    except ClipboardError:
        # xclip/xsel exit non-zero when nobody owns the selection: an empty clipboard.
        return ""
    return raw.decode("utf-8", errors="replace")


def copy(tool: ClipboardTool, value: str) -> None:
    """Put ``value`` on the clipboard and check that it arrived.

    Raises:
        ClipboardError: the tool failed, or the clipboard does not hold the value afterwards.
    """
    _run(tool.write, tool, value.encode("utf-8"), forks=tool.forks)
    if tool.read is None:
        return
    # A forking tool (xclip) owns the selection only once its child is up: on a busy machine
    # the first read-back can come too early, so look again for a moment before giving up.
    deadline = time.monotonic() + _READ_BACK_SECONDS
    while True:
        current = read(tool)
        if current is not None and hmac.compare_digest(current.encode(), value.encode()):
            return
        if time.monotonic() >= deadline:
            raise ClipboardError(f"{tool.name} did not keep the value on the clipboard")
        time.sleep(0.05)


def _mac(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()


def clear_if_unchanged(tool: ClipboardTool, key: bytes, mac: str) -> bool:
    """Empty the clipboard if it still holds the value whose HMAC under ``key`` is ``mac``.

    Returns whether it cleared. A clipboard that cannot be read back is cleared (it cannot
    be told apart, and leaving a secret there is worse).

    Raises:
        ClipboardError: writing the empty clipboard failed.
    """
    current = read(tool)
    if current is not None and not hmac.compare_digest(_mac(key, current), mac):
        return False
    _run(tool.write, tool, b"", forks=tool.forks)
    return True


def schedule_clear(tool: ClipboardTool, value: str, seconds: int) -> int:
    """Start the detached helper that clears the clipboard after ``seconds`` if it still
    holds ``value``; returns its pid. The helper outlives this process on purpose.

    Raises:
        UsageError: ``seconds`` is not between 1 and a day.
        ClipboardError: the helper could not be started.
    """
    if not 0 < seconds <= MAX_CLEAR_SECONDS:
        raise UsageError(f"the clipboard clear time is 1 to {MAX_CLEAR_SECONDS} seconds")
    key = secrets.token_bytes(32)
    order = {
        "tool": tool.name,
        "write": list(tool.write),
        "read": list(tool.read) if tool.read is not None else None,
        "forks": tool.forks,
        "seconds": seconds,
        "key": key.hex(),
        "mac": _mac(key, value),
    }
    try:
        helper = subprocess.Popen(
            [sys.executable, "-m", "memories.secrets.clipboard"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # a closed terminal must not take the clear with it
        )
        assert helper.stdin is not None
        helper.stdin.write(json.dumps(order).encode("utf-8"))
        helper.stdin.close()
    except OSError as exc:
        raise ClipboardError(f"the clipboard clear helper could not start ({exc.errno})") from exc
    return helper.pid


def _helper() -> int:
    """The detached helper: read the order from stdin, wait, clear if unchanged."""
    try:
        order = json.loads(sys.stdin.buffer.read(64 * 1024))
        tool = ClipboardTool(
            str(order["tool"]),
            tuple(str(a) for a in order["write"]),
            tuple(str(a) for a in order["read"]) if order["read"] is not None else None,
            bool(order["forks"]),
        )
        seconds, key, mac = int(order["seconds"]), bytes.fromhex(order["key"]), str(order["mac"])
    except (ValueError, KeyError, TypeError):
        return 2
    deadline = time.monotonic() + seconds
    # Waiting is this process's whole job; nothing else is synchronized on it.
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 1.0))
    try:
        clear_if_unchanged(tool, key, mac)
    except ClipboardError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_helper())
