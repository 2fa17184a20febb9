"""Copilot CLI collector against session logs and command history shaped like the real files."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CheckpointStore, CollectResult
from urchin.collectors.copilot import (
    HISTORY_LIMIT,
    CopilotCollector,
    default_root,
    parse_workspace_yaml,
)
from urchin.collectors.tail import FileTail
from urchin.errors import UrchinError
from urchin.event import Event, EventKind


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin"


@pytest.fixture
def root(isolated_home: Path) -> Path:
    return isolated_home / ".copilot"


def collect(root: Path, data_dir: Path) -> CollectResult:
    return run_once(CopilotCollector(root), data_dir)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def record(kind: str, event_id: str, second: int, data: dict[str, Any]) -> bytes:
    body = {
        "type": kind,
        "data": data,
        "id": event_id,
        "timestamp": f"2026-05-01T10:00:{second:02d}.000Z",
        "parentId": None,
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


BASH = {"command": "npm test", "description": "Run the tests"}
TORN = record("assistant.message", "e7", 30, {"messageId": "m2", "content": "All green."})


def session_fixture() -> bytes:
    start = {
        "sessionId": "abc",
        "version": 1,
        "producer": "copilot-agent",
        "copilotVersion": "0.0.350",
        "startTime": "2026-05-01T10:00:00.000Z",
        "context": {"cwd": "/w", "gitRoot": "/w", "branch": "main", "repository": "u/w"},
    }
    message = {"content": "fix tests", "transformedContent": "<ctx/>fix tests", "attachments": []}
    reply = {
        "messageId": "m1",
        "content": "I'll run the tests.",
        "toolRequests": [{"toolCallId": "call_1", "name": "bash", "arguments": BASH}],
    }
    done = {"toolCallId": "call_1", "success": True, "result": {"content": "ok"}}
    return b"".join(
        [
            record("session.start", "e1", 0, start),
            record("session.model_change", "e2", 1, {"newModel": "gpt-5"}),
            record("user.message", "e3", 2, {**message, "interactionId": "i1"}),
            record("assistant.turn_start", "e4", 3, {"turnId": "0"}),
            record("assistant.message", "e5", 4, reply),
            record("tool.execution_start", "e6", 5, {"toolCallId": "call_1", "toolName": "bash",
                                                     "arguments": BASH}),
            record("tool.execution_complete", "e6b", 6, done),
            record("session.foo", "e6c", 7, {"whatever": True}),
            TORN[:25],
        ]
    )  # fmt: skip


WORKSPACE_YAML = """id: abc
cwd: /w
git_root: /w
repository: u/w
branch: main
summary: "Fix the tests"
summary_count: 1
created_at: 2026-05-01T10:00:00.000Z
updated_at: 2026-05-01T10:05:00.000Z
"""


def write_session(root: Path, data: bytes, name: str = "abc") -> Path:
    folder = root / "session-state" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workspace.yaml").write_text(WORKSPACE_YAML, encoding="utf-8")
    path = folder / "events.jsonl"
    path.write_bytes(data)
    return path


def write_history(root: Path, entries: list[str]) -> Path:
    """Rewrite the history whole, as Copilot does (temp file and rename)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "command-history-state.json"
    tmp = root / "command-history-state.json.tmp"
    tmp.write_text(json.dumps({"commandHistory": entries}, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


# -- session logs ---------------------------------------------------------------------------


def test_first_run_reads_prompts_replies_and_shell_commands(root: Path, data_dir: Path) -> None:
    write_session(root, session_fixture())

    result = collect(root, data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [(e.kind, e.content, e.title) for e in got] == [
        (EventKind.CONVERSATION, "fix tests", None),
        (EventKind.AGENT, "I'll run the tests.", None),
        (EventKind.COMMAND, "npm test", "tool: bash"),
    ]
    assert {(e.source, e.workspace, e.session) for e in got} == {("copilot", "/w", "abc")}
    assert got[2].timestamp == datetime(2026, 5, 1, 10, 0, 5, tzinfo=UTC)
    # start, model change, turn start, tool completion and the unknown type: read, skipped
    assert result.new == 3 and result.skipped == 5


def test_incremental_run_completes_the_torn_line(root: Path, data_dir: Path) -> None:
    path = write_session(root, session_fixture())
    collect(root, data_dir)

    append(path, TORN[25:] + record("user.message", "e8", 31, {"content": "ship it"}))
    result = collect(root, data_dir)

    assert result.ok and result.new == 2
    assert [e.content for e in events(data_dir)][3:] == ["All green.", "ship it"]
    assert events(data_dir)[-1].workspace == "/w"  # remembered from session.start


def test_rerun_adds_nothing(root: Path, data_dir: Path) -> None:
    write_session(root, session_fixture())
    write_history(root, ["fix tests", "/login", "fix tests"])
    collect(root, data_dir)
    before = events(data_dir)

    again = collect(root, data_dir)

    assert again.ok and again.new == 0
    assert events(data_dir) == before


def test_restored_old_checkpoint_neither_loses_nor_duplicates(root: Path, data_dir: Path) -> None:
    path = write_session(root, session_fixture())
    collect(root, data_dir)
    checkpoint = data_dir / "checkpoints" / "copilot.json"
    old = checkpoint.read_bytes()
    append(path, TORN[25:])
    write_history(root, ["refactor the parser", "fix tests"])
    collect(root, data_dir)
    after = [e.id for e in events(data_dir)]

    checkpoint.write_bytes(old)  # a crash after appending, before the checkpoint
    result = collect(root, data_dir)

    assert result.ok and result.new == 0
    assert [e.id for e in events(data_dir)] == after
    assert len(after) == len(set(after)) == 5


def test_replaced_log_is_reread_without_duplicates(root: Path, data_dir: Path) -> None:
    path = write_session(root, session_fixture())
    collect(root, data_dir)

    tmp = path.with_name("events.jsonl.tmp")
    tmp.write_bytes(session_fixture()[:-25] + TORN)
    os.replace(tmp, path)
    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert result.new == 1
    assert [e.content for e in events(data_dir)][-1] == "All green."


def test_truncated_log_is_reread_from_the_start(root: Path, data_dir: Path) -> None:
    path = write_session(root, session_fixture())
    collect(root, data_dir)

    path.write_bytes(record("user.message", "n1", 40, {"content": "new start"}))
    result = collect(root, data_dir)

    assert result.ok and result.new == 1
    assert events(data_dir)[-1].content == "new start"


def test_invalid_json_line_is_skipped_and_counted(
    root: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = session_fixture()[:-25] + b'{"type":"user.message","data":{"content":"oops"\n' + TORN
    write_session(root, data)

    with caplog.at_level(logging.WARNING, logger="urchin.collectors.copilot"):
        result = collect(root, data_dir)

    assert result.ok
    assert [e.content for e in events(data_dir)][-1] == "All green."
    assert "1 malformed lines" in caplog.text
    assert "oops" not in caplog.text


def test_workspace_yaml_supplies_the_folder_when_the_start_record_is_missing(
    root: Path, data_dir: Path
) -> None:
    write_session(root, record("user.message", "x1", 1, {"content": "hello"}), name="def")

    collect(root, data_dir)

    (event,) = events(data_dir)
    assert (event.workspace, event.session) == ("/w", "def")


def test_legacy_session_file_directly_in_session_state(root: Path, data_dir: Path) -> None:
    folder = root / "session-state"
    folder.mkdir(parents=True)
    (folder / "0f0e0d0c-0000-4000-8000-000000000000.jsonl").write_bytes(
        record("user.message", "l1", 1, {"content": "legacy prompt"})
    )

    collect(root, data_dir)

    (event,) = events(data_dir)
    assert event.content == "legacy prompt"
    assert event.session == "0f0e0d0c-0000-4000-8000-000000000000"


def test_unreadable_log_is_reported_and_read_later(
    root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session(root, session_fixture())
    path.chmod(0)
    if os.geteuid() == 0:  # root reads anything; refuse it where the file is opened
        real_open = FileTail.open

        def guarded(self: FileTail) -> FileTail:
            if self.path == path and not path.stat().st_mode & 0o444:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(self)

        monkeypatch.setattr(FileTail, "open", guarded)

    denied = collect(root, data_dir)
    assert denied.errors == [f"cannot read {path}: Permission denied"]
    assert events(data_dir) == []

    path.chmod(0o600)
    later = collect(root, data_dir)
    assert later.ok and later.new == 3


# -- command history -------------------------------------------------------------------------


def test_history_records_each_prompt_once_and_skips_slash_commands(
    root: Path, data_dir: Path
) -> None:
    write_history(root, ["fix tests", "/login", "fix tests"])
    before = datetime.now(UTC)

    result = collect(root, data_dir)

    assert result.ok, result.errors
    (event,) = events(data_dir)
    assert (event.source, event.kind, event.content) == (
        "copilot",
        EventKind.CONVERSATION,
        "fix tests",
    )
    # No timestamps in the file: the time it was read.
    assert before - timedelta(seconds=1) <= event.timestamp <= datetime.now(UTC)
    assert result.skipped == 1


def test_history_rewrite_adds_only_new_prompts_oldest_first(root: Path, data_dir: Path) -> None:
    write_history(root, ["fix tests", "/login", "fix tests"])
    collect(root, data_dir)

    write_history(root, ["add docs", "bump version", "fix tests", "/login", "fix tests"])
    result = collect(root, data_dir)

    assert result.new == 2
    assert [e.content for e in events(data_dir)] == ["fix tests", "bump version", "add docs"]


def test_unparsable_history_is_retried_next_run(
    root: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_history(root, ["fix tests"])
    collect(root, data_dir)
    checkpoint = data_dir / "checkpoints" / "copilot.json"
    saved = checkpoint.read_bytes()
    (root / "command-history-state.json").write_text('{"commandHistory": ["add do', "utf-8")

    with caplog.at_level(logging.WARNING, logger="urchin.collectors.copilot"):
        half = collect(root, data_dir)

    assert half.ok and half.new == 0
    assert checkpoint.read_bytes() == saved
    assert "not valid JSON" in caplog.text

    write_history(root, ["add docs", "fix tests"])
    whole = collect(root, data_dir)
    assert whole.new == 1
    assert events(data_dir)[-1].content == "add docs"


def test_prompt_in_both_session_log_and_history_is_recorded_once(
    root: Path, data_dir: Path
) -> None:
    write_session(root, session_fixture())
    write_history(root, ["fix tests", "/login", "fix tests"])

    collect(root, data_dir)

    assert [e.content for e in events(data_dir)].count("fix tests") == 1


def test_history_remembers_a_bounded_number_of_prompts(root: Path, data_dir: Path) -> None:
    write_history(root, [f"old {n}" for n in range(1500)])
    collect(root, data_dir)
    write_history(root, [f"new {n}" for n in range(1500)])  # the file keeps only the newest

    second = collect(root, data_dir)
    third = collect(root, data_dir)

    state = json.loads((data_dir / "checkpoints" / "copilot.json").read_text("utf-8"))
    assert second.new == 1500 and third.new == 0
    assert len(state["history"]) == HISTORY_LIMIT


def test_history_longer_than_the_bound_is_not_repeated(root: Path, data_dir: Path) -> None:
    write_history(root, [f"prompt {n}" for n in range(HISTORY_LIMIT + 50)])

    first = collect(root, data_dir)
    again = collect(root, data_dir)

    assert first.new == HISTORY_LIMIT + 50
    assert again.new == 0
    assert events(data_dir)[0].content == f"prompt {HISTORY_LIMIT + 49}"  # oldest first


def test_broken_checkpoint_is_an_error_not_a_reread(root: Path, data_dir: Path) -> None:
    write_history(root, ["fix tests"])
    (data_dir / "checkpoints").mkdir(parents=True)
    (data_dir / "checkpoints" / "copilot.json").write_text("{not json", "utf-8")

    result = collect(root, data_dir)

    assert not result.ok and "corrupt" in result.errors[0]
    assert events(data_dir) == []


# -- helpers -------------------------------------------------------------------------------------


def test_parse_workspace_yaml_reads_top_level_scalars() -> None:
    text = WORKSPACE_YAML + "nested:\n  cwd: /not/this\n# cwd: /nor/this\n- item\nquoted: 'x y'\n"

    fields = parse_workspace_yaml(text)

    assert fields["cwd"] == "/w"
    assert fields["summary"] == "Fix the tests"
    assert fields["quoted"] == "x y"
    assert "nested" not in fields


def test_default_root_follows_copilot_home(isolated_home: Path) -> None:
    assert default_root({"HOME": str(isolated_home)}) == isolated_home / ".copilot"
    assert default_root({"COPILOT_HOME": "/srv/cp"}) == Path("/srv/cp")


def test_missing_folder_is_a_no_op(root: Path, data_dir: Path) -> None:
    result = collect(root, data_dir)

    assert not result.available
    assert events(data_dir) == []


def test_checkpoint_save_failure_surfaces(
    root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(root, session_fixture())
    calls: list[str] = []

    def save_then_fail(self: CheckpointStore, name: str, state: dict[str, Any]) -> None:
        calls.append(name)
        raise UrchinError("cannot write checkpoint: disk full")

    with monkeypatch.context() as patch:
        patch.setattr(CheckpointStore, "save", save_then_fail)
        failed = collect(root, data_dir)
    assert failed.errors == ["cannot write checkpoint: disk full"]

    result = collect(root, data_dir)
    assert result.ok and result.new == 0
    assert len(events(data_dir)) == 3


def test_urchin_collect_reads_copilot_through_the_cli(
    root: Path, data_dir: Path, urchin: Any
) -> None:
    write_session(root, session_fixture())
    write_history(root, ["fix tests", "/login", "fix tests"])

    first = urchin("collect", "copilot", "--json")
    again = urchin("collect", "copilot", "--json")

    assert first.code == 0, first.stderr
    (report,) = first.json()["collectors"]
    assert (report["name"], report["new"], report["errors"]) == ("copilot", 3, [])
    assert again.json()["new"] == 0


def test_instructions_to_a_subagent_are_agent_activity_not_the_users_words(
    root: Path, data_dir: Path
) -> None:
    start = {"sessionId": "abc", "context": {"cwd": "/w"}}
    delegated = {
        "content": "Search the repo for every caller of parse_config and list them.",
        "agentId": "explore-1",
        "interactionId": "i2",
    }
    answer = {"messageId": "m9", "content": "Found 3 callers.", "agentId": "explore-1"}
    write_session(
        root,
        b"".join(
            [
                record("session.start", "s1", 0, start),
                record("user.message", "s2", 1, {"content": "tidy the config loader"}),
                record("user.message", "s3", 2, delegated),
                record("assistant.message", "s4", 3, answer),
            ]
        ),
    )

    result = collect(root, data_dir)

    assert result.ok, result.errors
    by_content = {e.content: e for e in events(data_dir)}
    assert by_content["tidy the config loader"].kind is EventKind.CONVERSATION
    instruction = by_content[delegated["content"]]
    assert instruction.kind is EventKind.AGENT
    assert instruction.title == "subagent prompt"
    assert instruction.workspace == "/w"
    assert by_content["Found 3 callers."].kind is EventKind.AGENT
    assert [e.kind for e in events(data_dir)].count(EventKind.CONVERSATION) == 1
