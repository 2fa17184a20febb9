"""Helpers tests share: running the real console scripts, free ports, waiting on conditions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
