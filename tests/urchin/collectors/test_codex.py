"""The Codex collector against a live state DB, rollouts and history as Codex writes them."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from urchin.collectors.base import CheckpointStore, CollectResult, run_collector
from urchin.collectors.codex import CodexCollector
from urchin.ephemeral import Ephemeral
from urchin.errors import UrchinError
from urchin.event import Event, EventKind
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Recorder

T1 = "0199a1b2-0000-7000-8000-000000000001"  # the thread with a first user message
T2 = "0199a1b2-0000-7000-8000-000000000002"  # archived
T3 = "0199a1b2-0000-7000-8000-000000000003"  # titled /clear
T4 = "0199a1b2-0000-7000-8000-000000000004"  # created later
BASE = 1_777_629_600  # 2026-05-01T10:00:00Z

SCHEMA_0001 = """
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    rollout_path TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    source TEXT NOT NULL,
    model_provider TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL,
    approval_mode TEXT NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    archived_at INTEGER,
    git_sha TEXT,
    git_branch TEXT,
    git_origin_url TEXT
);
CREATE INDEX idx_threads_created_at ON threads(created_at DESC, id DESC);
CREATE INDEX idx_threads_updated_at ON threads(updated_at DESC, id DESC);
"""

LATER_MIGRATIONS = """
ALTER TABLE threads ADD COLUMN has_user_event INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN cli_version TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN first_user_message TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN created_at_ms INTEGER;
ALTER TABLE threads ADD COLUMN updated_at_ms INTEGER;
CREATE TRIGGER threads_created_at_ms_after_insert AFTER INSERT ON threads
WHEN NEW.created_at_ms IS NULL
BEGIN UPDATE threads SET created_at_ms = NEW.created_at * 1000 WHERE id = NEW.id; END;
CREATE TRIGGER threads_updated_at_ms_after_insert AFTER INSERT ON threads
WHEN NEW.updated_at_ms IS NULL
BEGIN UPDATE threads SET updated_at_ms = NEW.updated_at * 1000 WHERE id = NEW.id; END;
CREATE TABLE thread_dynamic_tools (thread_id TEXT NOT NULL, position INTEGER NOT NULL);
CREATE TABLE backfill_state (id INTEGER PRIMARY KEY, status TEXT NOT NULL);
"""


# -- fixture helpers ------------------------------------------------------------------------


def ts(second: int, ms: int = 0) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(BASE + second, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"


def record(at: str, kind: str, payload: dict[str, Any], *, compact: bool = True) -> str:
    value = {"timestamp": at, "type": kind, "payload": payload}
    return json.dumps(value, separators=(",", ":")) if compact else json.dumps(value)


def user(at: str, text: str) -> str:
    content = [{"type": "input_text", "text": text}]
    return record(at, "response_item", {"type": "message", "role": "user", "content": content})


def assistant(at: str, text: str, *, compact: bool = True) -> str:
    content = [{"type": "output_text", "text": text}]
    payload = {"type": "message", "role": "assistant", "content": content}
    return record(at, "response_item", payload, compact=compact)


def exec_call(at: str, call_id: str, command: str) -> str:
    arguments = json.dumps({"cmd": command, "workdir": "/home/u/app", "yield_time_ms": 1000})
    payload = {
        "type": "function_call",
        "name": "exec_command",
        "arguments": arguments,
        "call_id": call_id,
    }
    return record(at, "response_item", payload)


def rollout_path(home: Path, thread: str) -> Path:
    return home / "sessions" / "2026" / "05" / "01" / f"rollout-2026-05-01T10-00-00-{thread}.jsonl"


def append(path: Path, *lines: str, end: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + end)


TORN = '{"timestamp":"' + ts(9) + '","type":"response_item","payload":{"type":"message","role":"us'


def t1_lines() -> list[str]:
    meta = {
        "id": T1,
        "timestamp": ts(0),
        "cwd": "/home/u/app",
        "originator": "codex_cli_rs",
        "cli_version": "0.130.0",
        "instructions": None,
        "model_provider": "openai",
        "git": {"commit_hash": "abc", "branch": "main"},
    }
    context = "<environment_context>\n  <cwd>/home/u/app</cwd>\n</environment_context>"
    return [
        record(ts(0), "session_meta", meta),
        user(ts(1), context),
        user(ts(2), "fix the flaky test"),
        record(ts(2), "event_msg", {"type": "user_message", "message": "fix the flaky test"}),
        record(
            ts(3), "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}
        ),
        exec_call(ts(4), "call_1", "pytest -q"),
        record(
            ts(5),
            "event_msg",
            {
                "type": "exec_command_end",
                "call_id": "call_1",
                "command": ["bash", "-lc", "pytest -q"],
                "exit_code": 0,
                "aggregated_output": "3 passed",
            },
        ),
        record(
            ts(5),
            "response_item",
            {"type": "function_call_output", "call_id": "call_1", "output": "3 passed"},
        ),
        record(ts(6), "event_msg", {"type": "token_count", "info": {"total_token_usage": {}}}),
        assistant(ts(7), "All tests pass now.", compact=False),
    ]


def add_thread(
    conn: sqlite3.Connection,
    thread: str,
    path: Path,
    *,
    at: int,
    title: str,
    first: str = "",
    archived: int = 0,
    modern: bool = True,
) -> None:
    columns = (
        "id, rollout_path, created_at, updated_at, source, model_provider, cwd, title, "
        "sandbox_policy, approval_mode, archived"
    )
    values: list[Any] = [
        thread,
        str(path),
        at,
        at,
        "cli",
        "openai",
        "/home/u/app",
        title,
        "workspace-write",
        "on-request",
        archived,
    ]
    if modern:
        columns += ", first_user_message, has_user_event"
        values += [first, 1 if first else 0]
    marks = ",".join("?" * len(values))
    conn.execute(f"INSERT INTO threads ({columns}) VALUES ({marks})", values)  # noqa: S608


def touch_thread(conn: sqlite3.Connection, thread: str, at: int) -> None:
    conn.execute(
        "UPDATE threads SET updated_at = ?, updated_at_ms = ? WHERE id = ?",
        (at, at * 1000, thread),
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A CODEX_HOME with the state DB, rollouts and history the spec's fixture describes."""
    root = tmp_path / ".codex"
    root.mkdir()
    conn = sqlite3.connect(root / "state_5.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA_0001 + LATER_MIGRATIONS)
    t1 = rollout_path(root, T1)
    append(t1, *t1_lines())
    append(t1, TORN, end="")
    add_thread(conn, T1, t1, at=BASE, title="fix the flaky test", first="fix the flaky test")
    t2 = root / "archived_sessions" / rollout_path(root, T2).name
    append(t2, user(ts(1), "archived work"), assistant(ts(2), "archived reply"))
    add_thread(conn, T2, t2, at=BASE + 1, title="archived work", archived=1)
    t3 = rollout_path(root, T3)
    append(t3, user(ts(1), "/clear"), assistant(ts(2), "cleared reply"))
    add_thread(conn, T3, t3, at=BASE + 2, title="/clear")
    conn.close()
    history = [
        {"session_id": T1, "ts": BASE + 2, "text": "fix the flaky test"},
        {"conversation_id": "0187-old", "ts": BASE - 500, "text": "explain this repo"},
        {"session_id": "0199-other", "ts": BASE + 10, "text": "/clear"},
        {"session_id": "0199-other", "ts": BASE + 11, "text": "add a README"},
    ]
    append(root / "history.jsonl", *(json.dumps(h) for h in history))
    return root


@pytest.fixture
def urchin_dir(tmp_path: Path) -> Path:
    return tmp_path / "urchin"


def collect(collector: CodexCollector, urchin_dir: Path) -> CollectResult:
    recorder = Recorder(Journal(urchin_dir / "events.jsonl"), Ephemeral(urchin_dir))
    return run_collector(collector, recorder, Identity.resolve(), CheckpointStore(urchin_dir))


def events(urchin_dir: Path) -> list[Event]:
    return [entry.event for entry in Journal(urchin_dir / "events.jsonl").scan()]


def contents(urchin_dir: Path) -> Counter[tuple[str, str]]:
    return Counter((str(e.kind), e.content) for e in events(urchin_dir))


def checkpoint_bytes(urchin_dir: Path) -> bytes:
    return (urchin_dir / "checkpoints" / "codex.json").read_bytes()


FIRST_RUN = Counter(
    {
        ("conversation", "fix the flaky test"): 1,
        ("command", "pytest -q"): 1,
        ("agent", "All tests pass now."): 1,
        ("conversation", "explain this repo"): 1,
        ("conversation", "add a README"): 1,
    }
)


# -- behaviour ------------------------------------------------------------------------------


def test_first_run_reads_threads_rollouts_and_history(home: Path, urchin_dir: Path) -> None:
    result = collect(CodexCollector(home), urchin_dir)

    assert result.ok, result.errors
    assert contents(urchin_dir) == FIRST_RUN
    by_content = {e.content: e for e in events(urchin_dir)}
    prompt = by_content["fix the flaky test"]
    assert prompt.kind is EventKind.CONVERSATION and prompt.source == "codex"
    assert prompt.workspace == "/home/u/app" and prompt.session == T1
    assert prompt.title == "fix the flaky test"
    assert prompt.timestamp.isoformat().startswith("2026-05-01T10:00:02")
    assert by_content["pytest -q"].session == T1
    assert by_content["explain this repo"].session == "0187-old"
    assert by_content["add a README"].session == "0199-other"
    assert by_content["add a README"].workspace is None


def test_incremental_run_reads_only_what_was_added(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)

    t1 = rollout_path(home, T1)
    # The writer finishes its torn line, then carries on.
    append(t1, 'er","content":[{"type":"input_text","text":"now the lint"}]}}', end="\n")
    shell = {
        "type": "function_call",
        "name": "shell",
        "call_id": "call_2",
        "arguments": json.dumps({"command": ["bash", "-lc", "ruff check ."]}),
    }
    append(t1, record(ts(10), "response_item", shell))
    t4 = rollout_path(home, T4)
    append(
        t4,
        record(ts(20), "session_meta", {"id": T4, "cwd": "/srv/api"}),
        user(ts(21), "deploy the api"),
    )
    conn = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    touch_thread(conn, T1, BASE + 10)
    add_thread(conn, T4, t4, at=BASE + 20, title="deploy the api", first="deploy the api")
    conn.close()
    append(
        home / "history.jsonl",
        json.dumps({"session_id": "0199-x", "ts": BASE + 30, "text": "what changed?"}),
    )

    second = collect(collector, urchin_dir)
    assert second.ok, second.errors
    assert second.new == 4
    assert contents(urchin_dir) == FIRST_RUN + Counter(
        {
            ("conversation", "now the lint"): 1,
            ("command", "ruff check ."): 1,
            ("conversation", "deploy the api"): 1,
            ("conversation", "what changed?"): 1,
        }
    )
    deploy = next(e for e in events(urchin_dir) if e.content == "deploy the api")
    assert deploy.workspace == "/srv/api" and deploy.session == T4


def test_command_recorded_again_with_its_result_is_emitted_once(
    home: Path, urchin_dir: Path
) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    t1 = rollout_path(home, T1)
    append(t1, "", exec_call(ts(15), "call_9", "make build"))
    assert collect(collector, urchin_dir).new == 1
    end = {
        "type": "exec_command_end",
        "call_id": "call_9",
        "command": ["bash", "-lc", "make build"],
        "exit_code": 2,
    }
    output = {"type": "function_call_output", "call_id": "call_9", "output": "error"}
    append(t1, record(ts(16), "event_msg", end), record(ts(16), "response_item", output))

    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 0
    assert contents(urchin_dir)[("command", "make build")] == 1


def test_user_shell_command_without_a_function_call_is_recorded(
    home: Path, urchin_dir: Path
) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    end = {
        "type": "exec_command_end",
        "call_id": "user_1",
        "command": ["git", "status"],
        "exit_code": 0,
    }
    append(rollout_path(home, T1), "", record(ts(17), "event_msg", end))
    assert collect(collector, urchin_dir).new == 1
    assert contents(urchin_dir)[("command", "git status")] == 1


def test_oversized_line_is_skipped_and_counted(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home, max_line_bytes=4096)
    collect(collector, urchin_dir)
    huge = {"type": "function_call_output", "call_id": "call_1", "output": "y" * 10_000}
    append(
        rollout_path(home, T1),
        "",
        record(ts(18), "response_item", huge),
        assistant(ts(19), "After the big output."),
    )
    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir)[("agent", "After the big output.")] == 1


def test_rerun_without_changes_adds_nothing(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    before = (urchin_dir / "events.jsonl").read_bytes()
    again = collect(collector, urchin_dir)
    assert again.ok and again.new == 0
    assert (urchin_dir / "events.jsonl").read_bytes() == before


def test_crash_after_append_before_checkpoint_loses_and_repeats_nothing(
    home: Path, urchin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    append(rollout_path(home, T1), "", assistant(ts(11), "Lint is clean too."))
    append(
        home / "history.jsonl",
        json.dumps({"session_id": "0199-x", "ts": BASE + 30, "text": "what changed?"}),
    )
    expected = FIRST_RUN + Counter(
        {("agent", "Lint is clean too."): 1, ("conversation", "what changed?"): 1}
    )

    def fail(self: CheckpointStore, name: str, state: dict[str, Any]) -> None:
        raise UrchinError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(CheckpointStore, "save", fail)
        crashed = collect(collector, urchin_dir)
    assert crashed.errors == ["disk full"]
    assert contents(urchin_dir) == expected  # appended before the crash

    recovered = collect(collector, urchin_dir)
    assert recovered.ok and recovered.new == 0
    assert contents(urchin_dir) == expected


def test_restored_older_checkpoint_neither_loses_nor_duplicates(
    home: Path, urchin_dir: Path
) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    old = checkpoint_bytes(urchin_dir)
    append(rollout_path(home, T1), "", assistant(ts(11), "Lint is clean too."))
    collect(collector, urchin_dir)
    (urchin_dir / "checkpoints" / "codex.json").write_bytes(old)

    replay = collect(collector, urchin_dir)
    assert replay.ok and replay.new == 0
    assert contents(urchin_dir) == FIRST_RUN + Counter({("agent", "Lint is clean too."): 1})


def test_locked_database_is_reported_and_does_not_block_rollouts_or_history(
    home: Path, urchin_dir: Path
) -> None:
    collector = CodexCollector(home, busy_timeout=0.05)
    collect(collector, urchin_dir)

    t4 = rollout_path(home, T4)
    append(
        t4,
        record(ts(20), "session_meta", {"id": T4, "cwd": "/srv/api"}),
        user(ts(21), "deploy the api"),
    )
    append(
        home / "history.jsonl",
        json.dumps({"session_id": "0199-x", "ts": BASE + 30, "text": "what changed?"}),
    )
    writer = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    writer.execute("PRAGMA locking_mode = EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    add_thread(writer, T4, t4, at=BASE + 20, title="deploy the api", first="deploy the api")
    try:
        locked = collect(collector, urchin_dir)
        assert len(locked.errors) == 1 and "locked" in locked.errors[0]
        assert locked.new == 2
    finally:
        writer.execute("COMMIT")
        writer.close()
    expected = FIRST_RUN + Counter(
        {("conversation", "deploy the api"): 1, ("conversation", "what changed?"): 1}
    )
    assert contents(urchin_dir) == expected
    deploy = next(e for e in events(urchin_dir) if e.content == "deploy the api")
    assert deploy.workspace == "/srv/api" and deploy.session == T4

    after = collect(collector, urchin_dir)
    assert after.ok and after.new == 0
    assert contents(urchin_dir) == expected


def test_replaced_rollout_is_reread_without_repeating_lines(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    t1 = rollout_path(home, T1)
    replacement = t1.with_name("tmp-rollout")
    append(replacement, *t1_lines(), assistant(ts(12), "Rewritten, then continued."))
    os.replace(replacement, t1)

    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir) == FIRST_RUN + Counter({("agent", "Rewritten, then continued."): 1})


def test_truncated_rollout_then_appended_repeats_nothing(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    t1 = rollout_path(home, T1)
    with t1.open("r+", encoding="utf-8") as handle:
        handle.truncate(len("\n".join(t1_lines()[:3])) + 1)
    append(t1, user(ts(13), "start over"))

    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir) == FIRST_RUN + Counter({("conversation", "start over"): 1})


def test_rollout_moved_to_archived_sessions_is_followed(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    t1 = rollout_path(home, T1)
    moved = home / "archived_sessions" / t1.name
    t1.rename(moved)
    append(moved, "", assistant(ts(14), "Moved but still here."))

    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir) == FIRST_RUN + Counter({("agent", "Moved but still here."): 1})


def test_compressed_rollout_is_skipped_with_a_count_without_zstandard(
    home: Path, urchin_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as if not installed
    t1 = rollout_path(home, T1)
    compressed = t1.with_name(t1.name + ".zst")
    compressed.write_bytes(b"(\xb5/\xfd not really zstd")
    plain = t1.read_bytes()
    t1.unlink()
    collector = CodexCollector(home)

    with caplog.at_level(logging.WARNING):
        first = collect(collector, urchin_dir)
    assert first.ok, first.errors
    assert "zstandard" in caplog.text
    assert ("agent", "All tests pass now.") not in contents(urchin_dir)

    # Codex decompresses the rollout before appending again: then it is read whole.
    compressed.unlink()
    t1.write_bytes(plain)
    second = collect(collector, urchin_dir)
    assert second.ok
    assert contents(urchin_dir)[("agent", "All tests pass now.")] == 1
    assert contents(urchin_dir)[("command", "pytest -q")] == 1


def test_trimmed_history_is_not_read_twice(home: Path, urchin_dir: Path) -> None:
    collector = CodexCollector(home)
    collect(collector, urchin_dir)
    history = home / "history.jsonl"
    kept = history.read_text(encoding="utf-8").splitlines()[-2:]
    replacement = history.with_name("history.tmp")
    newest = json.dumps({"session_id": "0199-other", "ts": BASE + 40, "text": "ship it"})
    append(replacement, *kept, newest)
    os.replace(replacement, history)

    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir) == FIRST_RUN + Counter({("conversation", "ship it"): 1})


def test_oldest_schema_without_later_columns_still_works(tmp_path: Path, urchin_dir: Path) -> None:
    root = tmp_path / "old-codex"
    root.mkdir()
    conn = sqlite3.connect(root / "state_5.sqlite", isolation_level=None)
    conn.executescript(SCHEMA_0001)
    t1 = rollout_path(root, T1)
    append(t1, *t1_lines())
    add_thread(conn, T1, t1, at=BASE, title="fix the flaky test", modern=False)
    add_thread(conn, T3, rollout_path(root, T3), at=BASE, title="/clear", modern=False)
    conn.close()

    result = collect(CodexCollector(root), urchin_dir)
    assert result.ok, result.errors
    assert contents(urchin_dir)[("command", "pytest -q")] == 1
    assert collect(CodexCollector(root), urchin_dir).new == 0


def test_db_in_codex_sqlite_home(
    home: Path, tmp_path: Path, urchin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "sqlite-home"
    elsewhere.mkdir()
    shutil.move(home / "state_5.sqlite", elsewhere / "state_5.sqlite")
    monkeypatch.setenv("CODEX_SQLITE_HOME", str(elsewhere))
    result = collect(CodexCollector(home), urchin_dir)
    assert result.ok and contents(urchin_dir) == FIRST_RUN


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody can create files in (``chattr +i`` as root, mode 0555 otherwise)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=False, capture_output=True)
    folder.chmod(0o755)


def lock_folder(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=False, capture_output=True)
    else:
        folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except OSError:
        return
    (folder / "probe").unlink()
    pytest.skip("cannot make a folder read-only on this filesystem")


def test_wal_database_in_read_only_folder_without_shm_is_read_from_a_copy(
    home: Path, read_only_folder: Path, urchin_dir: Path
) -> None:
    # Rows that exist only in the -wal file, with no -shm next to it: the state a
    # crashed Codex leaves behind on a read-only mount.
    writer = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    t4 = rollout_path(home, T4)
    append(t4, user(ts(21), "deploy the api"))
    add_thread(writer, T4, t4, at=BASE + 20, title="deploy the api", first="deploy the api")
    shutil.copyfile(home / "state_5.sqlite", read_only_folder / "state_5.sqlite")
    shutil.copyfile(home / "state_5.sqlite-wal", read_only_folder / "state_5.sqlite-wal")
    writer.close()
    lock_folder(read_only_folder)

    result = collect(CodexCollector(home, read_only_folder), urchin_dir)
    assert result.ok, result.errors
    assert contents(urchin_dir) == FIRST_RUN + Counter({("conversation", "deploy the api"): 1})
    assert not (read_only_folder / "state_5.sqlite-shm").exists()


def test_missing_source_is_a_no_op(tmp_path: Path, urchin_dir: Path) -> None:
    result = collect(CodexCollector(tmp_path / "absent"), urchin_dir)
    assert not result.available and result.new == 0
    assert not (urchin_dir / "events.jsonl").exists()


def test_default_home_follows_codex_home(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CodexCollector().home == isolated_home / ".codex"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert CodexCollector().history_path == tmp_path / "elsewhere" / "history.jsonl"


# -- without the state DB -------------------------------------------------------------------


@pytest.fixture
def home_without_db(tmp_path: Path) -> Path:
    """A CODEX_HOME as older Codex releases leave it: rollouts and history, no state DB."""
    root = tmp_path / ".codex-old"
    append(rollout_path(root, T1), *t1_lines())
    archived = root / "archived_sessions" / rollout_path(root, T2).name
    append(
        archived,
        record(ts(0), "session_meta", {"id": T2, "cwd": "/srv/old"}),
        user(ts(1), "archived work"),
        assistant(ts(2), "archived reply"),
    )
    history = [
        {"session_id": T1, "ts": BASE + 2, "text": "fix the flaky test"},
        {"session_id": T2, "ts": BASE + 1, "text": "archived work"},
        {"session_id": "0199-gone", "ts": BASE + 40, "text": "a prompt whose rollout is gone"},
    ]
    append(root / "history.jsonl", *(json.dumps(h) for h in history))
    return root


def test_rollouts_are_read_without_a_state_db(home_without_db: Path, urchin_dir: Path) -> None:
    result = collect(CodexCollector(home_without_db), urchin_dir)

    assert result.ok, result.errors
    assert contents(urchin_dir) == Counter(
        {
            ("conversation", "fix the flaky test"): 1,
            ("command", "pytest -q"): 1,
            ("agent", "All tests pass now."): 1,
            ("conversation", "archived work"): 1,
            ("agent", "archived reply"): 1,
            ("conversation", "a prompt whose rollout is gone"): 1,
        }
    )
    by_content = {e.content: e for e in events(urchin_dir)}
    assert by_content["pytest -q"].workspace == "/home/u/app"
    assert by_content["pytest -q"].session == T1
    assert by_content["archived reply"].workspace == "/srv/old"

    append(rollout_path(home_without_db, T1), assistant(ts(30), "One more fix."))
    again = collect(CodexCollector(home_without_db), urchin_dir)
    assert again.ok and again.new == 1
    assert contents(urchin_dir)[("agent", "One more fix.")] == 1


def test_corrupt_state_db_does_not_block_history_or_rollouts(
    home_without_db: Path, urchin_dir: Path
) -> None:
    (home_without_db / "state_5.sqlite").write_bytes(b"this is not a database" * 200)

    result = collect(CodexCollector(home_without_db), urchin_dir)

    assert len(result.errors) == 1 and "state_5.sqlite" in result.errors[0]
    assert result.new == 6
    assert contents(urchin_dir)[("agent", "All tests pass now.")] == 1
    assert contents(urchin_dir)[("conversation", "a prompt whose rollout is gone")] == 1

    # Nothing is read twice while the database stays broken.
    again = collect(CodexCollector(home_without_db), urchin_dir)
    assert again.new == 0


def test_history_line_with_a_non_finite_time_is_skipped_not_fatal(
    home_without_db: Path, urchin_dir: Path
) -> None:
    # Python's json module reads NaN and Infinity; neither is a time.
    with (home_without_db / "history.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"session_id":"0199-x","ts":NaN,"text":"broken clock"}\n')
        handle.write('{"session_id":"0199-x","ts":1777629700.5,"text":"float seconds"}\n')

    result = collect(CodexCollector(home_without_db), urchin_dir)

    assert result.ok, result.errors
    found = {e.content: e for e in events(urchin_dir)}
    assert "broken clock" not in found
    assert found["float seconds"].timestamp.isoformat().startswith("2026-05-01T10:01:40")


def test_rollout_events_are_built_as_event_create_builds_them(
    home_without_db: Path, urchin_dir: Path
) -> None:
    import uuid

    from urchin.collectors import base

    t4 = rollout_path(home_without_db, T4)
    untimed = {"type": "message", "role": "assistant"}
    untimed["content"] = [{"type": "output_text", "text": "no clock on this line"}]
    append(
        t4,
        record(ts(20), "session_meta", {"id": T4, "cwd": "/srv/api"}),
        user(ts(21), "deploy the api"),
        exec_call(ts(21), "call_9", "make deploy"),
        assistant(ts(21), "Deployed."),
        # The folder changes mid-thread: later events carry the new one.
        record(ts(22), "turn_context", {"cwd": "/srv/web"}),
        user(ts(22), "now the web app"),
        json.dumps({"type": "response_item", "payload": untimed}),
        assistant("not a time", "an unreadable clock"),
    )

    result = collect(CodexCollector(home_without_db), urchin_dir)

    assert result.ok, result.errors
    found = {e.content: e for e in events(urchin_dir) if e.session == T4}
    assert set(found) == {
        "deploy the api",
        "make deploy",
        "Deployed.",
        "now the web app",
        "no clock on this line",
        "an unreadable clock",
    }
    lines = t4.read_bytes().split(b"\n")

    def line_id(index: int, at: str) -> uuid.UUID:
        digest = hashlib.blake2b(lines[index], digest_size=12).hexdigest()
        return uuid.uuid5(base._NAMESPACE, "\x1f".join(("codex", T4, "line", at, digest)))

    identity = Identity.resolve()
    expected = {
        "deploy the api": (EventKind.CONVERSATION, ts(21), "/srv/api", line_id(1, ts(21))),
        "make deploy": (
            EventKind.COMMAND,
            ts(21),
            "/srv/api",
            uuid.uuid5(base._NAMESPACE, "\x1f".join(("codex", T4, "call", "call_9"))),
        ),
        "Deployed.": (EventKind.AGENT, ts(21), "/srv/api", line_id(3, ts(21))),
        "now the web app": (EventKind.CONVERSATION, ts(22), "/srv/web", line_id(5, ts(22))),
    }
    for text, (kind, at, folder, event_id) in expected.items():
        built = Event.create(
            text,
            "codex",
            kind,
            timestamp=datetime.fromisoformat(at),
            event_id=event_id,
            workspace=folder,
            session=T4,
            actor=identity.actor(folder),
        )
        assert found[text] == built, text
    # A line without a readable timestamp is dated when it is read.
    for text in ("no clock on this line", "an unreadable clock"):
        assert found[text].workspace == "/srv/web"
        assert found[text].timestamp > datetime.fromisoformat(ts(22))


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["<environment_context>\n  <cwd>/a</cwd>\n</environment_context>", "fix it"], "fix it"),
        (["# AGENTS.md instructions for /a\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"], ""),
        (["  <user_instructions>\nuse tabs\n</user_instructions>  ", "go"], "go"),
        (["<INSTRUCTIONS>x</INSTRUCTIONS>", "<permissions>y</permissions>"], ""),
        # Ordinary prompts that start with a tag, or only look like a block, are kept.
        (["<b>bold</b>"], "<b>bold</b>"),
        (["<div> is not closed"], "<div> is not closed"),
        (["first", "   ", "second"], "first\n\nsecond"),
    ],
)
def test_user_text_leaves_out_injected_context_blocks(texts: list[str], expected: str) -> None:
    from urchin.collectors.codex_fields import user_text

    content: list[object] = [{"type": "input_text", "text": text} for text in texts]
    content.append({"type": "input_image", "image_url": "data:"})
    content.append("not a block")
    assert user_text(content) == expected
    assert user_text("  a plain string prompt ") == "a plain string prompt"
    assert user_text(None) == ""
