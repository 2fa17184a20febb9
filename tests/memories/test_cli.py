from __future__ import annotations

from tests.support import run_cli


def test_memories_entry_point_answers_version_and_help() -> None:
    version = run_cli("memories", "--version")
    assert version.code == 0
    assert version.stdout.startswith("memories, version 0.1.0")
    assert "encrypted" in run_cli("memories", "--help").stdout
