"""daemon start, status and stop; the entry point's version and help."""

from __future__ import annotations

from memories.processes import alive
from tests.memories.cli.conftest import Memories
from tests.support import run_cli


def test_entry_point_answers_version_and_help() -> None:
    version = run_cli("memories", "--version")
    assert version.code == 0
    assert version.stdout.startswith("memories, version 0.1.0")
    help_text = run_cli("memories", "--help").stdout
    assert "encrypted" in help_text and "--no-daemon-autostart" in help_text
    put_help = run_cli("memories", "put", "--help")
    assert put_help.code == 0
    assert "Examples:" in put_help.stdout and "--card-type" in put_help.stdout


def test_daemon_start_status_stop(memories: Memories) -> None:
    started = memories.ok("daemon", "start")
    pid = started["pid"]
    assert alive(pid)
    again = memories.fails(1, "daemon", "start")
    assert again["code"] == "conflict"

    status = memories.ok("daemon", "status")
    assert status["running"] is True and status["pid"] == pid
    assert status["initialized"] is False
    human = memories("daemon", "status")
    assert human.code == 0 and str(pid) in human.stdout

    stopped = memories.ok("daemon", "stop")
    assert stopped == {"stopped": True, "pid": pid}
    assert not alive(pid)
    assert memories.ok("daemon", "stop") == {"stopped": False, "pid": None}
    assert memories.ok("daemon", "status")["running"] is False
