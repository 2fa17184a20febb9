"""`scripts/demo.py`, the end-to-end demo `make demo` runs, in the isolated test home."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import kill_processes, memories_daemons

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
DEMO = SCRIPTS / "demo.py"


def _new_counts(output: str) -> dict[str, int]:
    """Source → new events for every row of every `urchin collect` table in ``output``."""
    counts: dict[str, int] = {}
    for name, new in re.findall(r"^\W*([a-z][a-z-]*)\W+(\d+)\W+\d+\W+(?:ok|not on)", output, re.M):
        counts[name] = counts.get(name, 0) + int(new)
    return counts


def _import_demo(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import demo

    return demo


def test_demo_runs_end_to_end_in_a_throwaway_home(tmp_path: Path, isolated_home: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, str(DEMO)],
        env={**os.environ, "TMPDIR": str(scratch), "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "demo failed" not in proc.stderr

    # Every sample source was collected; the second run added only the new commit.
    counts = _new_counts(out)
    for source in ("shell", "claude", "copilot", "gemini", "codex", "opencode", "local-model"):
        assert counts.get(source, 0) > 0, (source, counts)
    assert counts["git"] == 1
    assert "Add idempotency keys to payment webhooks" in out

    # The exported token reached the journal only as a redaction marker.
    assert "export GITHUB_TOKEN=[REDACTED:github_token]" in out
    assert re.search(r"gh[p]_[A-Za-z0-9]{36}", out + proc.stderr) is None

    # HTTP intake accepted the event and stopped on SIGTERM; MCP search found it.
    assert re.search(r'POST /ingest -> 200 \{"id":"[0-9a-f-]{36}","status":"ok"\}', out)
    assert "intake stopped with SIGTERM (exit 0)" in out
    assert "urchin_search" in out and "urchin_semantic_search" in out
    assert "deploy-bot/conversation: Release checklist for the webshop" in out

    # The daily note was written with urchin's markers around the day's events.
    note = out[out.index("<!-- URCHIN:start -->") : out.index("<!-- URCHIN:end -->")]
    assert "**deploy-bot**" in note and "**git**" in note

    assert "redaction    on; 1 in the journal (github_token 1)" in out
    assert "all good" in out

    # The memories tour: an edit with its diff, a card graph, a file, a lock that holds.
    assert "+Staging is rebuilt every Saturday at 02:00 UTC" in out
    assert "reviewed-by: Terse reviewer [persona]" in out
    assert "wrote 14 bytes to" in out
    assert "ghp_demo_only" not in out
    assert "the vault is locked; run `memories unlock`" in out + proc.stderr
    # Only daemons of the demo's own home (under its TMPDIR) count, not other processes.
    left = memories_daemons(scratch)
    kill_processes(left)
    assert left == {}, "the demo left a daemon running"
    # Nothing was written to the home the demo was started from, and its own is gone.
    assert not (isolated_home / ".local").exists()
    assert list(scratch.iterdir()) == []


def test_a_failing_step_stops_the_demo_with_a_clear_message(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    demo = _import_demo(monkeypatch)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        # The intake is given a port that is already in use, so it cannot start.
        monkeypatch.setattr(demo, "free_port", lambda: taken.getsockname()[1])
        code = demo.main()

    captured = capsys.readouterr()
    assert code == 1
    assert "demo failed: urchin intake exited with 1" in captured.err
    assert "Address already in use" in captured.err
    assert "Traceback" not in captured.err
    assert "intake stopped" in captured.out
    # The steps after the failure did not run, and the throwaway home is removed.
    assert "MCP:" not in captured.out
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("urchin-demo-")] == []
