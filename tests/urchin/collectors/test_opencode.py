"""The OpenCode collector against real SQLite databases laid out as OpenCode writes them."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from urchin.collectors.base import CheckpointStore, CollectResult, run_collector
from urchin.collectors.opencode import OpenCodeCollector
from urchin.ephemeral import Ephemeral
from urchin.errors import UrchinError
from urchin.event import Event, EventKind
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Recorder

SESSION = "ses_01JABCDEF"
# One fixed instant: the fixtures' timestamps are relative to it and every collector's clock
# reads it, so the time between importing this module and running a test (long on a loaded
# machine) cannot move a part across the quiet or stale thresholds.
NOW = int(time.time() * 1000)


def frozen_clock() -> float:
    return NOW / 1000


def opencode(data_dir: Path, **kwargs: Any) -> OpenCodeCollector:
    """A collector whose clock stands still at ``NOW``."""
    kwargs.setdefault("clock", frozen_clock)
    return OpenCodeCollector(data_dir, **kwargs)


SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
    directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT,
    summary_additions INTEGER, summary_deletions INTEGER, summary_files INTEGER,
    summary_diffs TEXT, revert TEXT, permission TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE todo (session_id TEXT NOT NULL, content TEXT NOT NULL, status TEXT NOT NULL,
    priority TEXT NOT NULL, position INTEGER NOT NULL,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE INDEX message_session_idx ON message(session_id);
CREATE INDEX part_message_idx ON part(message_id);
CREATE INDEX part_session_idx ON part(session_id);
"""


# -- fixture helpers ------------------------------------------------------------------------


def connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def add_message(conn: sqlite3.Connection, mid: str, role: str, at: int, **extra: Any) -> None:
    data = {"role": role, "time": {"created": at}, "sessionID": SESSION, **extra}
    conn.execute(
        "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, SESSION, at, at, json.dumps(data))
    )


def add_part(
    conn: sqlite3.Connection, pid: str, mid: str, at: int, data: dict[str, Any] | str
) -> None:
    raw = data if isinstance(data, str) else json.dumps(data)
    conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, SESSION, at, at, raw))


def update_part(conn: sqlite3.Connection, pid: str, data: dict[str, Any], at: int) -> None:
    conn.execute(
        "UPDATE part SET data = ?, time_updated = ? WHERE id = ?", (json.dumps(data), at, pid)
    )


def bash(status: str, start: int, command: str = "pytest -q") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": {"command": command}}
    state["time"] = {"start": start}
    if status in ("completed", "error"):
        state["time"]["end"] = start + 1500
        state["output"] = "3 passed"
    return {"type": "tool", "tool": "bash", "callID": "call_1", "state": state}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An OpenCode data folder with the database the spec's fixture describes."""
    folder = tmp_path / "opencode"
    folder.mkdir()
    conn = connect(folder / "opencode.db")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    t = NOW - 300_000
    conn.execute("INSERT INTO project VALUES ('prj_1', '/w', 'git', ?, ?)", (t, t))
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES (?, 'prj_1', 'brave-fox', '/w', 'Fix flaky tests', '1.2.0', ?, ?)",
        (SESSION, t, t),
    )
    add_message(conn, "msg_01", "user", t)
    add_part(conn, "prt_01", "msg_01", t, {"type": "text", "text": "fix the flaky tests"})
    add_part(
        conn,
        "prt_02",
        "msg_01",
        t,
        {"type": "text", "text": "<file contents>", "synthetic": True},
    )
    add_message(conn, "msg_02", "assistant", t + 1000, modelID="m", providerID="p")
    add_part(conn, "prt_03", "msg_02", t + 1000, {"type": "step-start"})
    add_part(conn, "prt_04", "msg_02", t + 1100, bash("running", t + 1100))
    add_part(conn, "prt_05", "msg_02", t + 1200, '{"type":"text","text":"unterminated')
    conn.close()
    return folder


@pytest.fixture
def urchin_dir(tmp_path: Path) -> Path:
    return tmp_path / "urchin"


def collect(collector: OpenCodeCollector, urchin_dir: Path) -> CollectResult:
    recorder = Recorder(Journal(urchin_dir / "events.jsonl"), Ephemeral(urchin_dir))
    return run_collector(collector, recorder, Identity.resolve(), CheckpointStore(urchin_dir))


def events(urchin_dir: Path) -> list[Event]:
    return [entry.event for entry in Journal(urchin_dir / "events.jsonl").scan()]


def contents(urchin_dir: Path) -> list[tuple[str, str]]:
    return [(str(e.kind), e.content) for e in events(urchin_dir)]


def checkpoint_bytes(urchin_dir: Path) -> bytes:
    return (urchin_dir / "checkpoints" / "opencode.json").read_bytes()


# -- behaviour ------------------------------------------------------------------------------


def test_first_run_reads_prompt_text_from_parts_and_holds_back_a_running_tool(
    data_dir: Path, urchin_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        result = collect(opencode(data_dir), urchin_dir)

    assert result.ok, result.errors
    assert result.new == 1
    [event] = events(urchin_dir)
    assert event.kind is EventKind.CONVERSATION
    assert event.content == "fix the flaky tests"
    assert event.source == "opencode"
    assert event.workspace == "/w"
    assert event.session == SESSION
    assert event.title == "Fix flaky tests"
    assert event.actor is not None and event.actor.workspace == "/w"
    # The part with invalid JSON is counted and reported, without echoing its content.
    assert "not valid JSON" in caplog.text
    assert "unterminated" not in caplog.text
    assert result.skipped >= 3  # synthetic text, step-start, invalid JSON


def test_running_tool_part_is_emitted_exactly_once_after_it_completes(
    data_dir: Path, urchin_dir: Path
) -> None:
    collector = opencode(data_dir)
    collect(collector, urchin_dir)
    assert ("command", "pytest -q") not in contents(urchin_dir)

    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", bash("completed", NOW - 298_900), NOW - 1000)
    conn.close()
    second = collect(collector, urchin_dir)
    third = collect(collector, urchin_dir)

    assert second.ok and second.new == 1
    assert third.ok and third.new == 0
    assert Counter(contents(urchin_dir))[("command", "pytest -q")] == 1
    command = next(e for e in events(urchin_dir) if e.kind is EventKind.COMMAND)
    assert command.session == SESSION and command.workspace == "/w"


def test_failed_tool_is_emitted_and_tagged(data_dir: Path, urchin_dir: Path) -> None:
    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", bash("error", NOW - 298_900, "make deploy"), NOW - 1000)
    conn.close()
    collect(opencode(data_dir), urchin_dir)
    command = next(e for e in events(urchin_dir) if e.kind is EventKind.COMMAND)
    assert command.content == "make deploy"
    assert command.tags == ("error",)


def test_assistant_text_waits_for_its_message_to_complete(data_dir: Path, urchin_dir: Path) -> None:
    # "Now" is 50 s after the text part last changed, so it is still streaming.
    collector = opencode(data_dir, clock=lambda: (NOW - 150_000) / 1000)
    conn = connect(data_dir / "opencode.db")
    add_part(conn, "prt_06", "msg_02", NOW - 200_000, {"type": "text", "text": "All green."})
    # A later part moves the watermark far past the text part's own update time.
    add_message(conn, "msg_03", "user", NOW - 100_000)
    add_part(conn, "prt_07", "msg_03", NOW - 100_000, {"type": "text", "text": "thanks"})
    conn.close()
    collect(collector, urchin_dir)
    assert ("agent", "All green.") not in contents(urchin_dir)

    # Completing the message does not touch the part row: the pending set catches it.
    conn = connect(data_dir / "opencode.db")
    done = {"role": "assistant", "time": {"created": NOW - 299_000, "completed": NOW - 100}}
    conn.execute(
        "UPDATE message SET data = ?, time_updated = ? WHERE id = 'msg_02'",
        (json.dumps(done), NOW - 100),
    )
    conn.close()
    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir)[-1] == ("agent", "All green.")
    assert collect(collector, urchin_dir).new == 0


def test_assistant_text_that_stopped_changing_is_emitted(data_dir: Path, urchin_dir: Path) -> None:
    conn = connect(data_dir / "opencode.db")
    add_part(conn, "prt_06", "msg_02", NOW - 5000, {"type": "text", "text": "Cut off mid"})
    conn.close()
    collect(opencode(data_dir), urchin_dir)
    assert ("agent", "Cut off mid") not in contents(urchin_dir)

    later = opencode(data_dir, clock=lambda: NOW / 1000 + 600)
    assert collect(later, urchin_dir).new == 1
    assert ("agent", "Cut off mid") in contents(urchin_dir)


def test_rerun_without_changes_adds_nothing(data_dir: Path, urchin_dir: Path) -> None:
    collector = opencode(data_dir)
    collect(collector, urchin_dir)
    before = (urchin_dir / "events.jsonl").read_bytes()
    again = collect(collector, urchin_dir)
    assert again.ok and again.new == 0
    assert (urchin_dir / "events.jsonl").read_bytes() == before


def test_part_updated_long_after_it_was_final_is_not_emitted_again(
    data_dir: Path, urchin_dir: Path
) -> None:
    collector = opencode(data_dir)
    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", bash("completed", NOW - 298_900), NOW - 298_000)
    add_part(conn, "prt_07", "msg_01", NOW - 1000, {"type": "text", "text": "and lint"})
    conn.close()
    collect(collector, urchin_dir)
    assert Counter(contents(urchin_dir))[("command", "pytest -q")] == 1

    # OpenCode prunes old tool output in place much later: a new time_updated, same part.
    pruned = bash("completed", NOW - 298_900)
    pruned["state"]["time"]["compacted"] = NOW
    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", pruned, NOW)
    update_part(conn, "prt_01", {"type": "text", "text": "fix the flaky tests"}, NOW)
    conn.close()
    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 0
    assert Counter(contents(urchin_dir))[("command", "pytest -q")] == 1


def test_crash_after_append_before_checkpoint_loses_and_repeats_nothing(
    data_dir: Path, urchin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = opencode(data_dir)
    collect(collector, urchin_dir)
    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", bash("completed", NOW - 298_900), NOW - 1000)
    conn.close()

    def fail(self: CheckpointStore, name: str, state: dict[str, Any]) -> None:
        raise UrchinError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(CheckpointStore, "save", fail)
        crashed = collect(collector, urchin_dir)
    assert crashed.errors == ["disk full"]
    assert ("command", "pytest -q") in contents(urchin_dir)  # appended before the crash

    recovered = collect(collector, urchin_dir)
    assert recovered.ok and recovered.new == 0
    ids = [e.id for e in events(urchin_dir)]
    assert len(ids) == len(set(ids)) == 2


def test_restored_older_checkpoint_neither_loses_nor_duplicates(
    data_dir: Path, urchin_dir: Path
) -> None:
    collector = opencode(data_dir)
    collect(collector, urchin_dir)
    old = checkpoint_bytes(urchin_dir)
    conn = connect(data_dir / "opencode.db")
    update_part(conn, "prt_04", bash("completed", NOW - 298_900), NOW - 1000)
    add_message(conn, "msg_03", "user", NOW - 500)
    add_part(conn, "prt_08", "msg_03", NOW - 500, {"type": "text", "text": "now deploy"})
    conn.close()
    collect(collector, urchin_dir)
    (urchin_dir / "checkpoints" / "opencode.json").write_bytes(old)

    replay = collect(collector, urchin_dir)
    assert replay.ok and replay.new == 0
    assert Counter(contents(urchin_dir)) == Counter(
        {
            ("conversation", "fix the flaky tests"): 1,
            ("command", "pytest -q"): 1,
            ("conversation", "now deploy"): 1,
        }
    )


def test_locked_database_is_reported_and_nothing_advances(data_dir: Path, urchin_dir: Path) -> None:
    collector = opencode(data_dir, busy_timeout=0.05)
    collect(collector, urchin_dir)
    saved = checkpoint_bytes(urchin_dir)

    writer = connect(data_dir / "opencode.db")
    writer.execute("PRAGMA locking_mode = EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    add_message(writer, "msg_03", "user", NOW - 500)
    add_part(writer, "prt_08", "msg_03", NOW - 500, {"type": "text", "text": "now deploy"})
    try:
        locked = collect(collector, urchin_dir)
        assert locked.new == 0
        assert len(locked.errors) == 1 and "locked" in locked.errors[0]
        assert checkpoint_bytes(urchin_dir) == saved
    finally:
        writer.execute("COMMIT")
        writer.close()

    after = collect(collector, urchin_dir)
    assert after.ok and after.new == 1
    assert contents(urchin_dir)[-1] == ("conversation", "now deploy")


def test_archived_session_parts_are_skipped(data_dir: Path, urchin_dir: Path) -> None:
    conn = connect(data_dir / "opencode.db")
    conn.execute("UPDATE session SET time_archived = ?", (NOW,))
    conn.close()
    result = collect(opencode(data_dir), urchin_dir)
    assert result.ok and result.new == 0


def test_channel_database_is_read_too(data_dir: Path, urchin_dir: Path) -> None:
    (data_dir / "opencode.db").rename(data_dir / "opencode-beta.db")
    for suffix in ("-wal", "-shm"):
        side = data_dir / f"opencode.db{suffix}"
        if side.exists():
            side.rename(data_dir / f"opencode-beta.db{suffix}")
    result = collect(opencode(data_dir), urchin_dir)
    assert result.ok and result.new == 1


def test_unknown_schema_is_an_error_not_a_crash(tmp_path: Path, urchin_dir: Path) -> None:
    folder = tmp_path / "oc"
    folder.mkdir()
    sqlite3.connect(folder / "opencode.db").execute("CREATE TABLE part (x)").connection.close()
    result = collect(opencode(folder), urchin_dir)
    assert len(result.errors) == 1 and "unknown" in result.errors[0]
    assert not (urchin_dir / "checkpoints" / "opencode.json").exists()


def test_missing_source_is_a_no_op(tmp_path: Path, urchin_dir: Path) -> None:
    result = collect(opencode(tmp_path / "absent"), urchin_dir)
    assert not result.available and result.new == 0
    assert not (urchin_dir / "events.jsonl").exists()


def test_default_location_follows_xdg_data_home(isolated_home: Path) -> None:
    expected = isolated_home / ".local" / "share" / "opencode"
    assert OpenCodeCollector().data_dir == expected


# -- the legacy JSON tree -------------------------------------------------------------------


def write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


@pytest.fixture
def storage_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "legacy"
    root = folder / "storage"
    t = NOW - 300_000
    write_json(
        root / "session" / "prj_1" / f"{SESSION}.json",
        {"id": SESSION, "directory": "/w", "title": "Legacy", "time": {"created": t}},
    )
    write_json(
        root / "message" / SESSION / "msg_01.json",
        {"id": "msg_01", "sessionID": SESSION, "role": "user", "time": {"created": t}},
    )
    write_json(
        root / "message" / SESSION / "msg_02.json",
        {"id": "msg_02", "sessionID": SESSION, "role": "assistant", "time": {"created": t}},
    )
    user_part = {"id": "prt_01", "messageID": "msg_01", "sessionID": SESSION}
    write_json(
        root / "part" / "msg_01" / "prt_01.json",
        {**user_part, "type": "text", "text": "hello legacy"},
    )
    tool = {"id": "prt_02", "messageID": "msg_02", "sessionID": SESSION, **bash("running", t)}
    write_json(root / "part" / "msg_02" / "prt_02.json", tool)
    (root / "part" / "msg_02" / "prt_03.json").write_text("{broken", encoding="utf-8")
    return folder


def test_legacy_storage_tree_is_read_when_no_database_exists(
    storage_dir: Path, urchin_dir: Path
) -> None:
    collector = opencode(storage_dir)
    first = collect(collector, urchin_dir)
    assert first.ok and contents(urchin_dir) == [("conversation", "hello legacy")]
    assert events(urchin_dir)[0].workspace == "/w"

    root = storage_dir / "storage"
    # A decided part rewritten in full is not emitted again; the tool completes.
    write_json(
        root / "part" / "msg_01" / "prt_01.json",
        {
            "id": "prt_01",
            "messageID": "msg_01",
            "sessionID": SESSION,
            "type": "text",
            "text": "hello legacy",
        },
    )
    tool = {
        "id": "prt_02",
        "messageID": "msg_02",
        "sessionID": SESSION,
        **bash("completed", NOW - 300_000, "cargo test"),
    }
    write_json(root / "part" / "msg_02" / "prt_02.json", tool)
    os.utime(root / "part" / "msg_01" / "prt_01.json", ns=(time.time_ns(), time.time_ns()))
    second = collect(collector, urchin_dir)
    assert second.ok and second.new == 1
    assert contents(urchin_dir) == [("conversation", "hello legacy"), ("command", "cargo test")]
    assert collect(collector, urchin_dir).new == 0
    saved = json.loads(checkpoint_bytes(urchin_dir))
    assert set(saved["storage"]) == {
        "part/msg_01/prt_01.json",
        "part/msg_02/prt_02.json",
        "part/msg_02/prt_03.json",
    }


def test_parts_migrated_from_the_legacy_tree_are_not_emitted_again(
    data_dir: Path, storage_dir: Path, urchin_dir: Path
) -> None:
    # Before the upgrade: only the JSON tree exists, and prt_01 is read from it.
    database = data_dir / "opencode.db"
    shutil.move(storage_dir / "storage", data_dir / "storage")
    parked = data_dir.parent / "parked.db"
    database.rename(parked)
    collector = opencode(data_dir)
    assert collect(collector, urchin_dir).new == 1

    # The upgrade moves the same parts into the database, next to new ones.
    parked.rename(database)
    conn = connect(database)
    add_message(conn, "msg_03", "user", NOW - 500)
    add_part(conn, "prt_08", "msg_03", NOW - 500, {"type": "text", "text": "after upgrade"})
    conn.close()
    result = collect(collector, urchin_dir)
    assert result.ok and result.new == 1
    assert contents(urchin_dir) == [
        ("conversation", "hello legacy"),
        ("conversation", "after upgrade"),
    ]
    assert "storage" not in json.loads(checkpoint_bytes(urchin_dir))


def test_shell_call_still_running_a_day_later_is_recorded_as_unfinished(
    data_dir: Path, urchin_dir: Path
) -> None:
    # OpenCode was killed mid-call: the part says "running" and will never change again.
    day_ago = NOW - 25 * 3600 * 1000
    conn = connect(data_dir / "opencode.db")
    add_message(conn, "msg_09", "assistant", day_ago, modelID="m", providerID="p")
    add_part(conn, "prt_90", "msg_09", day_ago, bash("running", day_ago, "make deploy"))
    conn.close()

    result = collect(opencode(data_dir), urchin_dir)

    assert result.ok, result.errors
    [stuck] = [e for e in events(urchin_dir) if e.content == "make deploy"]
    assert stuck.kind is EventKind.COMMAND
    assert stuck.tags == ("unfinished",)
    assert stuck.workspace == "/w"
    # The recent running call still waits for its result.
    assert ("command", "pytest -q") not in contents(urchin_dir)

    again = collect(opencode(data_dir), urchin_dir)
    assert again.new == 0
    assert [e.content for e in events(urchin_dir)].count("make deploy") == 1
