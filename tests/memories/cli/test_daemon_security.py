"""What a daemon started on demand does not keep: the CLI's secrets, a readable memory image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memories.config import load_settings
from memories.daemon.launcher import daemon_pid
from tests.memories.cli.conftest import PASSWORD, Memories
from tests.support import script

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# Runs a program as an ordinary process of the same user would run: with no capabilities at
# all (root holds some that override the dumpable flag, and a process with fewer capabilities
# than its target may not read it either way). Dropping the bounding set keeps the programs it
# starts without them too. A user that is not root has none to drop.
_WITHOUT_CAPABILITIES = r"""
import ctypes, os, sys

class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]

libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP = 24
for cap in range(64):
    libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the last one, or without CAP_SETPCAP
header, data = Header(0x20080522, 0), (Data * 2)()
assert libc.capget(ctypes.byref(header), data) == 0, ctypes.get_errno()
for word in data:
    word.effective = word.permitted = word.inheritable = 0
assert libc.capset(ctypes.byref(header), data) == 0, ctypes.get_errno()
os.execv(sys.argv[1], sys.argv[1:])
"""

# Reads the environment of each pid given, and of a plain child it starts for comparison.
_READER = r"""
import json, subprocess, sys

def attempt(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            f.read()
        return "read"
    except PermissionError:
        return "denied"

plain = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                         stdin=subprocess.PIPE)
try:
    print(json.dumps({"plain": attempt(plain.pid), "daemon": attempt(int(sys.argv[1]))}))
finally:
    plain.stdin.close()
    plain.wait(timeout=10)
"""


def _without_capabilities(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_CAPABILITIES, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **kwargs,
    )


@linux_only
def test_the_started_daemon_has_no_password_in_its_environment(store: Memories) -> None:
    pid = daemon_pid(load_settings())
    assert pid is not None
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:
        # Not root: the kernel refuses a same-user reader outright (checked below as well).
        environ = None
    if environ is not None:
        names = {entry.partition(b"=")[0] for entry in environ.split(b"\0") if entry}
        assert b"MEMORIES_HOME" in names  # the allowlisted settings arrive
        assert b"MEMORIES_PASSWORD" not in names
        assert b"COLUMNS" not in names  # set by the test for the CLI; not on the allowlist
        assert PASSWORD.encode() not in environ


@linux_only
def test_the_daemon_is_not_dumpable_and_writes_no_core(memories: Memories) -> None:
    started = _without_capabilities(
        script("memories"), "daemon", "start", "--json", env={**os.environ, "COLUMNS": "200"}
    )
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]

    reader = _without_capabilities(sys.executable, "-c", _READER, str(pid))
    assert reader.returncode == 0, reader.stderr
    # The same reader can read a plain process of the same user, but not the daemon.
    assert json.loads(reader.stdout) == {"plain": "read", "daemon": "denied"}

    limits = Path(f"/proc/{pid}/limits").read_text(encoding="ascii")
    core = next(line for line in limits.splitlines() if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"]


def test_the_cli_drops_the_password_from_its_environment_once_read() -> None:
    # A command that reads MEMORIES_PASSWORD, then shows what a child it starts inherits and
    # what its own /proc environment block still holds.
    script = (
        "import os, subprocess, sys\n"
        "from memories.cli.common import CliState\n"
        "state = CliState()\n"
        "assert state.secret('MEMORIES_PASSWORD') == 'hunter2-secret-value'\n"
        "child = subprocess.run([sys.executable, '-c',"
        " 'import os; print(os.environ.get(\"MEMORIES_PASSWORD\"))'],"
        " capture_output=True, text=True, check=True).stdout.strip()\n"
        "block = open('/proc/self/environ', 'rb').read() if os.path.exists('/proc/self') else b''\n"
        "print(child, b'hunter2-secret-value' in block, 'MEMORIES_PASSWORD' in os.environ)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "MEMORIES_PASSWORD": "hunter2-secret-value"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "False", "False"]


def test_private_text_on_the_command_line_gets_a_warning(store: Memories) -> None:
    argv = store("put", "--private", "--title", "Salary", "the salary figures", "--json")
    assert argv.code == 0, argv.stderr
    assert "warning:" in argv.stderr and "visible to other local users" in argv.stderr
    assert "memories put --private -" in argv.stderr
    assert "the salary figures" not in argv.stderr

    piped = store("put", "--private", "--title", "Salary", "-", "--json", input="figures")
    assert piped.code == 0, piped.stderr
    assert "warning" not in piped.stderr

    ordinary = store("put", "an ordinary note", "--json")
    assert ordinary.code == 0 and "warning" not in ordinary.stderr

    help_text = store("put", "--help").stdout
    assert "--private" in help_text and "standard input" in help_text
    assert "memories put --private --title" in help_text
