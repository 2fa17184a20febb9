"""How a started daemon tells its launcher that it serves, or why it could not start.

The launcher creates a pipe and passes its write end to the child as ``--status-fd N``. The
daemon writes exactly one line of JSON to it and closes it:

- ``{"ok": true, "pid": 1234}`` once it listens on its socket and has written its PID file;
- ``{"ok": false, "error": {"code": "...", "message": "..."}}`` when it cannot start, with the
  code and message of the :class:`~memories.errors.MemoriesError` that stopped it (the same
  error envelope as the wire; messages never hold secrets, and no password ever reaches the
  daemon at start).

The launcher waits on the read end with a deadline: the record, or end-of-file when the child
died without writing one (its exit status and log are then all there is), or the deadline.
The launcher rebuilds the reported error with :func:`~memories.errors.error_for_code`, so the
front end shows the real message and exits with the real status.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from memories.errors import MemoriesError, error_for_code

__all__ = ["STATUS_FD_OPTION", "report_failure", "report_ready", "wait_until_ready"]

STATUS_FD_OPTION = "--status-fd"

_MAX_RECORD = 16 * 1024
_MAX_MESSAGE = 500


def _write(fd: int, record: dict[str, Any]) -> None:
    data = json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # the launcher went away; the log still says what happened
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def report_ready(fd: int | None) -> None:
    """Tell the launcher (if any) that the daemon serves, and close the channel."""
    if fd is not None:
        _write(fd, {"ok": True, "pid": os.getpid()})


def report_failure(fd: int | None, exc: MemoriesError) -> None:
    """Tell the launcher (if any) why the daemon cannot start, and close the channel."""
    if fd is not None:
        _write(fd, {"ok": False, "error": {"code": exc.code, "message": exc.message}})


def wait_until_ready(
    fd: int, process: subprocess.Popen[bytes], *, timeout: float, log_path: Path
) -> None:
    """Wait for the started daemon's record on ``fd`` (the read end of its status pipe).

    Returns when the daemon reports that it serves. On failure the child has exited (or is
    stopped here) before this raises.

    Raises:
        MemoriesError: the subclass the daemon reported (its code and message); a plain
            ``MemoriesError`` naming the log when it died without a record, sent a garbled one
            or did not report within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    received = b""
    while b"\n" not in received and len(received) <= _MAX_RECORD:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            process.terminate()
            _stop(process)
            raise MemoriesError(
                f"the memories daemon did not start within {timeout:.0f}s; see {log_path}"
            )
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        received += chunk
    record = _parse(received)
    if record is None:
        status = _stop(process)
        raise MemoriesError(f"the memories daemon exited at start ({status}); see {log_path}")
    if record.get("ok") is True:
        return
    error = record["error"]
    _stop(process)
    raise error_for_code(str(error["code"]), str(error["message"])[:_MAX_MESSAGE])


def _parse(data: bytes) -> dict[str, Any] | None:
    """The one record, or None when there is none or it does not have the documented shape."""
    line, newline, _ = data.partition(b"\n")
    if not newline:
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    if record.get("ok") is True:
        return record
    error = record.get("error")
    if (
        record.get("ok") is False
        and isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    ):
        return record
    return None


def _stop(process: subprocess.Popen[bytes]) -> str:
    """Wait briefly for a failing child to exit (terminating it if it lingers); describe how
    it ended."""
    try:
        code = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            code = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit status {code}"
