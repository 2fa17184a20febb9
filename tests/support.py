"""Helpers tests share: running the real console scripts, free ports, waiting on conditions,
finding and stopping the daemons a test started."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BIN_DIR = Path(sys.executable).parent


def script(name: str) -> str:
    """Path of an installed console script (``urchin``, ``memories``) in this environment."""
    path = BIN_DIR / name
    if not path.exists():
        raise RuntimeError(f"console script {name} is not installed in {BIN_DIR}")
    return str(path)


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(
    name: str,
    *args: str,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> CliResult:
    """Run a console script through its real entry point and capture what it prints."""
    data = input.encode("utf-8") if isinstance(input, str) else input
    proc = subprocess.run(
        [script(name), *args],
        input=data,
        capture_output=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    return CliResult(
        proc.returncode,
        proc.stdout.decode("utf-8", errors="replace"),
        proc.stderr.decode("utf-8", errors="replace"),
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that the OS says is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], object], timeout: float = 15, interval: float = 0.02) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def _is_memories_daemon(args: list[str]) -> bool:
    """Whether a command line runs ``memories daemon run`` (as ``python -m memories`` or the
    console script)."""
    return any(
        os.path.basename(arg) == "memories" and args[i + 1 : i + 3] == ["daemon", "run"]
        for i, arg in enumerate(args)
    )


def _points_under(pid: int, args: list[str], roots: tuple[str, ...]) -> bool:
    """Whether the process's arguments, ``MEMORIES_HOME`` or working folder lie under a root.

    The command line is readable for every process; the environment and working folder only
    where the kernel allows (a hardened daemon hides them from unprivileged readers).
    """
    if any(arg.startswith(roots) for arg in args):
        return True
    with contextlib.suppress(OSError):
        for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            name, _, value = entry.partition(b"=")
            if name == b"MEMORIES_HOME" and os.fsdecode(value).startswith(roots):
                return True
    with contextlib.suppress(OSError):
        if os.readlink(f"/proc/{pid}/cwd").startswith(roots):
            return True
    return False


def memories_daemons(under: Path) -> dict[int, str]:
    """Running ``memories daemon`` processes that belong to a home under ``under``: pid to
    command line. Empty where there is no /proc."""
    resolved = under.resolve()
    roots = tuple({f"{under}{os.sep}", f"{resolved}{os.sep}"})
    found: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # gone meanwhile
        args = [os.fsdecode(a) for a in raw.split(b"\0") if a]
        if state.rpartition(")")[2].split()[:1] == ["Z"]:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # one of ours: reap it
            continue
        if _is_memories_daemon(args) and _points_under(pid, args, roots):
            found[pid] = " ".join(args)
    return found


def kill_processes(pids: Iterable[int], timeout: float = 10) -> None:
    """SIGKILL ``pids`` and wait until each is gone (a child of ours is reaped)."""

    def gone(pid: int) -> bool:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return True
        return state.rpartition(")")[2].split()[:1] == ["Z"]

    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda pid=pid: gone(pid), timeout=timeout)  # type: ignore[misc]


def require_tools(*names: str, debian: str) -> None:
    """Skip the test unless every program in ``names`` is on PATH (or under ``/usr/sbin``);
    under CI (``CI=true``) a missing program fails it instead: CI must install ``debian``."""
    missing = [n for n in names if shutil.which(n) is None and not os.path.exists(n)]
    if not missing:
        return
    reason = f"{', '.join(missing)} not installed (Debian: apt-get install {debian})"
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"CI must provide {reason}")
    pytest.skip(reason)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """Terminate ``proc`` and wait for it; kill it if it does not stop within ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
