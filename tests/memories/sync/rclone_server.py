"""A real ``rclone serve webdav`` on a loopback port the OS picks, and an rclone remote for it.

The remote lives in the test's own rclone config (under the test's HOME), with a user and a
password, as a user's would: the transport never sees either.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import require_tools, stop_process, wait_for

_STARTED = re.compile(rb"(?:Server started on|listening on).*?https?://127\.0\.0\.1:(\d+)/")


def require_rclone() -> str:
    """The rclone binary; skip (fail under CI, where `.ci/run` installs it) when absent."""
    require_tools("rclone", debian="rclone")
    found = shutil.which("rclone")
    assert found is not None
    return found


@dataclass(frozen=True)
class WebdavServer:
    remote: str  # NAME: of the configured remote
    served: Path  # the folder the server serves
    port: int
    password: str


@contextmanager
def webdav_server(served: Path, name: str = "testdav") -> Iterator[WebdavServer]:
    """Start ``rclone serve webdav`` over ``served``, configure remote ``name`` for it, stop it."""
    binary = require_rclone()
    served.mkdir(parents=True, exist_ok=True)
    password = "canary-rclone-pass-" + os.urandom(6).hex()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                binary,
                "serve",
                "webdav",
                "--addr",
                "127.0.0.1:0",
                "--user",
                "syncer",
                "--pass",
                password,
                "-v",
                str(served),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:

            def started() -> int | None:
                log.seek(0)
                found = _STARTED.search(log.read())
                if proc.poll() is not None:
                    raise AssertionError("rclone serve webdav exited at start-up")
                return int(found.group(1)) if found else None

            port = int(wait_for(started, timeout=30))
            subprocess.run(
                [
                    binary,
                    "config",
                    "create",
                    "--obscure",
                    name,
                    "webdav",
                    f"url=http://127.0.0.1:{port}/",
                    "vendor=other",
                    "user=syncer",
                    f"pass={password}",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            yield WebdavServer(f"{name}:", served, port, password)
        finally:
            stop_process(proc)
