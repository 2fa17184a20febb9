"""Gemini CLI collector against chat recordings and logs shaped like the real files."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CollectResult
from urchin.collectors.gemini import GeminiCollector, chat_message, default_root
from urchin.collectors.tail import FileTail
from urchin.event import Event, EventKind

SESSION = "ab12cd34-5678-4abc-9def-0123456789ab"
PROJECT = "/home/u/myproj"
CHAT_NAME = "session-2026-05-01T10-00-ab12cd34.jsonl"


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin"


@pytest.fixture
def root(isolated_home: Path) -> Path:
    return isolated_home / ".gemini"


def collect(root: Path, data_dir: Path) -> CollectResult:
    return run_once(GeminiCollector(root), data_dir)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def ts(second: int) -> str:
    return f"2026-05-01T10:00:{second:02d}.000Z"


def user(message_id: str, second: int, text: str) -> dict[str, Any]:
    return {"id": message_id, "timestamp": ts(second), "type": "user", "content": [{"text": text}]}


def shell_call(call_id: str, second: int, command: str, status: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": "run_shell_command",
        "args": {"command": command, "description": "List files"},
        "result": [{"functionResponse": {"id": call_id, "response": {"output": "a\nb"}}}],
        "status": status,
        "timestamp": ts(second),
        "displayName": "Shell",
        "description": "Runs a shell command",
        "resultDisplay": "a\nb",
    }


def gemini(message_id: str, second: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": message_id,
        "timestamp": ts(second),
        "type": "gemini",
        "content": text,
        "thoughts": [],
        "model": "gemini-2.5-pro",
        **extra,
    }


METADATA = {
    "sessionId": SESSION,
    "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
    "startTime": ts(0),
    "lastUpdated": ts(0),
    "kind": "main",
}
TOKENS = {"input": 100, "output": 20, "cached": 0, "thoughts": 5, "tool": 0, "total": 125}
TORN = line(user("u3", 30, "and the tests?"))


def chat_fixture() -> bytes:
    g1 = gemini("g1", 2, "Running ls.", toolCalls=[shell_call("c1", 3, "ls -la", "success")])
    return b"".join(
        [
            line(METADATA),
            line(user("u1", 1, "hi")),
            line(g1),
            line({**g1, "tokens": TOKENS}),  # the same message again: last copy wins
            line({"$set": {"summary": "Listing files", "lastUpdated": ts(4)}}),
            line(user("u2", 5, "never mind")),
            line(gemini("g2", 6, "Okay.")),
            line({"$rewindTo": "u2"}),  # drops u2 and g2
            TORN[:30],
        ]
    )


def project_dir(root: Path, name: str = "myproj", marker: str | None = PROJECT) -> Path:
    folder = root / "tmp" / name
    (folder / "chats").mkdir(parents=True, exist_ok=True)
    if marker is not None:
        (folder / ".project_root").write_text(marker, encoding="utf-8")
    return folder


def write_chat(root: Path, data: bytes, name: str = CHAT_NAME) -> Path:
    path = project_dir(root) / "chats" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def rewrite(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- JSONL chats ------------------------------------------------------------------------------


def test_first_run_folds_upserts_and_rewinds_into_events(root: Path, data_dir: Path) -> None:
    write_chat(root, chat_fixture())

    result = collect(root, data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [(e.kind, e.content, e.title) for e in got] == [
        (EventKind.CONVERSATION, "hi", None),
        (EventKind.AGENT, "Running ls.", None),
        (EventKind.COMMAND, "ls -la", "tool: run_shell_command"),
    ]
    assert {(e.source, e.workspace, e.session) for e in got} == {("gemini", PROJECT, SESSION)}
    assert got[2].timestamp.isoformat() == "2026-05-01T10:00:03+00:00"
    assert result.skipped >= 2  # the two rewound messages


def test_incremental_run_completes_the_torn_line(root: Path, data_dir: Path) -> None:
    path = write_chat(root, chat_fixture())
    collect(root, data_dir)

    append(path, TORN[30:] + line(gemini("g3", 31, "Running them.")))
    result = collect(root, data_dir)

    assert result.ok and result.new == 2
    assert [e.content for e in events(data_dir)][3:] == ["and the tests?", "Running them."]


def test_rerun_adds_nothing(root: Path, data_dir: Path) -> None:
    write_chat(root, chat_fixture())
    collect(root, data_dir)
    before = events(data_dir)

    again = collect(root, data_dir)

    assert again.ok and again.new == 0
    assert events(data_dir) == before


def test_later_copies_of_a_recorded_message_add_nothing(root: Path, data_dir: Path) -> None:
    path = write_chat(root, chat_fixture()[: -len(TORN[:30])])
    collect(root, data_dir)

    g1 = gemini("g1", 2, "Running ls.", toolCalls=[shell_call("c1", 3, "ls -la", "success")])
    append(path, line({**g1, "tokens": {**TOKENS, "total": 130}}))
    result = collect(root, data_dir)

    assert result.new == 0
    assert len(events(data_dir)) == 3


def test_tool_call_is_recorded_once_it_finishes(root: Path, data_dir: Path) -> None:
    path = write_chat(root, line(METADATA) + line(user("u1", 1, "build it")))
    running = gemini("g1", 2, "", toolCalls=[shell_call("c1", 3, "make", "executing")])
    append(path, line(running))
    collect(root, data_dir)
    assert [e.content for e in events(data_dir)] == ["build it"]

    finished = gemini("g1", 2, "", toolCalls=[shell_call("c1", 3, "make", "success")])
    cancelled = gemini("g2", 9, "", toolCalls=[shell_call("c2", 9, "rm -rf /", "cancelled")])
    append(path, line(finished) + line(cancelled))
    collect(root, data_dir)

    assert [(e.kind, e.content) for e in events(data_dir)] == [
        (EventKind.CONVERSATION, "build it"),
        (EventKind.COMMAND, "make"),
    ]


def test_rewind_after_recording_keeps_what_was_recorded(root: Path, data_dir: Path) -> None:
    path = write_chat(root, line(METADATA) + line(user("u1", 1, "first")))
    append(path, line(user("u2", 2, "second")))
    collect(root, data_dir)

    append(path, line({"$rewindTo": "u2"}) + line(user("u4", 4, "second, rephrased")))
    result = collect(root, data_dir)

    assert result.new == 1
    assert [e.content for e in events(data_dir)] == ["first", "second", "second, rephrased"]


def test_set_messages_replaces_the_list_without_recording_synthetic_ones(
    root: Path, data_dir: Path
) -> None:
    summary = {"id": "s1", "timestamp": ts(9), "type": "user", "content": [{"text": "summary"}]}
    data = (
        line(METADATA)
        + line(user("u1", 1, "keep me"))
        + line(gemini("g1", 2, "dropped by the replacement"))
        + line({"$set": {"messages": [user("u1", 1, "keep me"), summary]}})
    )
    write_chat(root, data)

    collect(root, data_dir)

    assert [e.content for e in events(data_dir)] == ["keep me"]


def test_restored_old_checkpoint_neither_loses_nor_duplicates(root: Path, data_dir: Path) -> None:
    path = write_chat(root, chat_fixture())
    collect(root, data_dir)
    checkpoint = data_dir / "checkpoints" / "gemini.json"
    old = checkpoint.read_bytes()
    append(path, TORN[30:])
    collect(root, data_dir)
    after = [e.id for e in events(data_dir)]

    checkpoint.write_bytes(old)  # a crash after appending, before the checkpoint
    result = collect(root, data_dir)

    assert result.ok and result.new == 0
    assert [e.id for e in events(data_dir)] == after
    assert len(after) == len(set(after)) == 4


def test_replaced_chat_is_reread_without_duplicates(root: Path, data_dir: Path) -> None:
    path = write_chat(root, chat_fixture())
    collect(root, data_dir)

    # Gemini moves an unreadable file aside and writes a new one through a rename.
    os.replace(path, path.with_name(path.name + ".unreadable-1777629700"))
    tmp = path.with_name("new.tmp")
    tmp.write_bytes(chat_fixture()[: -len(TORN[:30])] + TORN)
    os.replace(tmp, path)
    result = collect(root, data_dir)

    assert result.ok, result.errors
    contents = [e.content for e in events(data_dir)]
    assert contents == ["hi", "Running ls.", "ls -la", "and the tests?"]


def test_truncated_chat_is_reread_from_the_start(root: Path, data_dir: Path) -> None:
    path = write_chat(root, chat_fixture())
    collect(root, data_dir)

    path.write_bytes(line(METADATA) + line(user("u9", 40, "fresh")))
    result = collect(root, data_dir)

    assert result.ok and result.new == 1
    assert events(data_dir)[-1].content == "fresh"


def test_invalid_json_line_is_skipped_and_counted(
    root: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_chat(
        root, line(METADATA) + b'{"id":"x","type":"user","content\n' + line(user("u1", 1, "ok"))
    )

    with caplog.at_level(logging.WARNING, logger="urchin.collectors.gemini"):
        result = collect(root, data_dir)

    assert result.ok
    assert [e.content for e in events(data_dir)] == ["ok"]
    assert "1 malformed lines" in caplog.text


def test_subagent_chat_is_agent_activity_in_its_directories(root: Path, data_dir: Path) -> None:
    meta = {**METADATA, "sessionId": "sub-1", "kind": "subagent", "directories": ["/w/sub"]}
    write_chat(
        root, line(meta) + line(user("a1", 1, "inspect the parser")), name=f"{SESSION}/sub-1.jsonl"
    )
    project_dir(root, "other", marker=None)
    other = root / "tmp" / "other" / "chats" / "sub.jsonl"
    other.write_bytes(line(meta) + line(user("a2", 2, "no marker here")))

    collect(root, data_dir)

    got = {(e.kind, e.content, e.title, e.workspace, e.session) for e in events(data_dir)}
    assert got == {
        (EventKind.AGENT, "inspect the parser", "subagent prompt", PROJECT, "sub-1"),
        (EventKind.AGENT, "no marker here", "subagent prompt", "/w/sub", "sub-1"),
    }


def test_project_root_comes_from_the_registry_for_hashed_folders(
    root: Path, data_dir: Path
) -> None:
    hashed = hashlib.sha256(b"/home/u/legacy").hexdigest()
    project_dir(root, hashed, marker=None)
    (root / "projects.json").write_text(
        json.dumps({"projects": {"/home/u/legacy": "legacy"}}), encoding="utf-8"
    )
    (root / "tmp" / hashed / "chats" / CHAT_NAME).write_bytes(
        line(METADATA) + line(user("u1", 1, "old layout"))
    )

    collect(root, data_dir)

    (event,) = events(data_dir)
    assert event.workspace == "/home/u/legacy"


def test_unreadable_chat_is_reported_and_read_later(
    root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_chat(root, chat_fixture())
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

    path.chmod(0o600)
    later = collect(root, data_dir)
    assert later.ok and later.new == 3


# -- legacy JSON chats --------------------------------------------------------------------------


def legacy_record(messages: list[dict[str, Any]]) -> str:
    record = {**METADATA, "sessionId": "legacy-1", "lastUpdated": ts(20), "messages": messages}
    return json.dumps(record, indent=2)


def test_legacy_json_chat_is_read_and_reread_when_rewritten(root: Path, data_dir: Path) -> None:
    project_dir(root)
    path = root / "tmp" / "myproj" / "chats" / "session-2026-04-01T09-00-legacy01.json"
    first = [
        user("l1", 1, "old question"),
        gemini("l2", 2, "old answer", toolCalls=[shell_call("c9", 2, "git log", "success")]),
    ]
    path.write_text(legacy_record(first), encoding="utf-8")
    collect(root, data_dir)
    assert [e.content for e in events(data_dir)] == ["old question", "old answer", "git log"]

    rewrite(path, legacy_record([*first, user("l3", 10, "follow-up")]))
    result = collect(root, data_dir)

    assert result.new == 1
    assert events(data_dir)[-1].content == "follow-up"
    assert events(data_dir)[-1].session == "legacy-1"


def test_legacy_json_is_skipped_once_migrated_to_jsonl(root: Path, data_dir: Path) -> None:
    project_dir(root)
    chats = root / "tmp" / "myproj" / "chats"
    (chats / "session-x.json").write_text(legacy_record([user("l1", 1, "old")]), "utf-8")
    (chats / "session-x.jsonl").write_bytes(
        line({**METADATA, "sessionId": "legacy-1"}) + line(user("l1", 1, "old"))
    )

    collect(root, data_dir)

    assert [e.content for e in events(data_dir)] == ["old"]


def test_half_written_legacy_json_is_retried(root: Path, data_dir: Path) -> None:
    project_dir(root)
    path = root / "tmp" / "myproj" / "chats" / "session-y.json"
    whole = legacy_record([user("l1", 1, "eventually")])
    path.write_text(whole[: len(whole) // 2], encoding="utf-8")

    half = collect(root, data_dir)
    assert half.ok and half.new == 0

    path.write_text(whole, encoding="utf-8")
    assert collect(root, data_dir).new == 1


# -- logs.json ---------------------------------------------------------------------------------


def logs_entry(number: int, text: str, second: int, session: str = SESSION) -> dict[str, Any]:
    return {
        "sessionId": session,
        "messageId": number,
        "type": "user",
        "message": text,
        "timestamp": ts(second),
    }


def test_logs_json_prompts_above_the_highest_message_id(root: Path, data_dir: Path) -> None:
    logs = project_dir(root) / "logs.json"
    logs.write_text(json.dumps([logs_entry(0, "hi", 1), logs_entry(1, "/stats", 2)], indent=2))
    collect(root, data_dir)
    assert [(e.content, e.session, e.workspace) for e in events(data_dir)] == [
        ("hi", SESSION, PROJECT)
    ]

    entries = [logs_entry(0, "hi", 1), logs_entry(1, "/stats", 2), logs_entry(2, "more", 3)]
    rewrite(logs, json.dumps(entries, indent=2))
    result = collect(root, data_dir)

    assert result.new == 1
    assert events(data_dir)[-1].content == "more"


def test_prompt_in_both_chat_and_logs_is_recorded_once(root: Path, data_dir: Path) -> None:
    write_chat(root, chat_fixture())
    logs = root / "tmp" / "myproj" / "logs.json"
    logs.write_text(json.dumps([logs_entry(0, "hi", 1), logs_entry(1, "/stats", 2)], indent=2))

    collect(root, data_dir)

    assert [e.content for e in events(data_dir)].count("hi") == 1


def test_half_written_logs_json_is_retried(
    root: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = project_dir(root) / "logs.json"
    text = json.dumps([logs_entry(0, "hi", 1), logs_entry(1, "there", 2)], indent=2)
    logs.write_text(text[:40], encoding="utf-8")

    with caplog.at_level(logging.WARNING, logger="urchin.collectors.gemini"):
        half = collect(root, data_dir)

    assert half.ok and half.new == 0
    assert "not valid JSON" in caplog.text
    logs.write_text(text, encoding="utf-8")
    assert collect(root, data_dir).new == 2


def test_reset_logs_json_numbers_sessions_again_without_repeats(root: Path, data_dir: Path) -> None:
    logs = project_dir(root) / "logs.json"
    logs.write_text(json.dumps([logs_entry(0, "a", 1), logs_entry(1, "b", 2)]))
    collect(root, data_dir)

    # A corrupt file was renamed away; the session starts counting from 0 again.
    rewrite(logs, json.dumps([logs_entry(0, "c", 9)]))
    result = collect(root, data_dir)

    assert result.new == 1
    assert [e.content for e in events(data_dir)] == ["a", "b", "c"]


# -- odds and ends ------------------------------------------------------------------------------


def test_missing_folder_is_a_no_op(root: Path, data_dir: Path) -> None:
    result = collect(root, data_dir)

    assert not result.available
    assert events(data_dir) == []


def test_default_root_follows_gemini_cli_home(isolated_home: Path) -> None:
    assert default_root({"HOME": str(isolated_home)}) == isolated_home / ".gemini"
    assert default_root({"GEMINI_CLI_HOME": "/srv/g"}) == Path("/srv/g/.gemini")


def test_chat_message_prefers_what_was_typed_and_skips_thoughts() -> None:
    record = {
        "id": "u1",
        "timestamp": ts(1),
        "type": "user",
        "content": [{"text": "Content from @a.py:\n..."}, {"text": "more"}],
        "displayContent": [{"text": "explain @a.py"}],
    }
    reply = {**gemini("g1", 2, ""), "content": [{"text": "hmm", "thought": True}, {"text": "Done"}]}

    typed, answered = chat_message(record), chat_message(reply)

    assert typed is not None and typed.text == "explain @a.py"
    assert answered is not None and answered.text == "Done"
    assert chat_message({"$rewindTo": "x"}) is None


def test_urchin_collect_reads_gemini_through_the_cli(
    root: Path, data_dir: Path, urchin: Any
) -> None:
    write_chat(root, chat_fixture())
    (root / "tmp" / "myproj" / "logs.json").write_text(
        json.dumps([logs_entry(0, "hi", 1), logs_entry(1, "/stats", 2)], indent=2)
    )

    first = urchin("collect", "gemini", "--json")
    again = urchin("collect", "gemini", "--json")

    assert first.code == 0, first.stderr
    (report,) = first.json()["collectors"]
    assert (report["name"], report["new"], report["errors"]) == ("gemini", 3, [])
    assert again.json()["new"] == 0
    assert [e.workspace for e in events(data_dir)] == [PROJECT] * 3


def test_prompt_with_file_references_keeps_only_the_users_words(root: Path, data_dir: Path) -> None:
    # What gemini-cli records when the prompt says @src/app.py and no displayContent is kept.
    expanded = {
        "id": "u1",
        "timestamp": ts(1),
        "type": "user",
        "content": [
            {"text": "why does @src/app.py crash on start?"},
            {"text": "\n--- Content from referenced files ---"},
            {"text": "\nContent from @src/app.py:\n"},
            {"text": "import os\nAPI_KEY = load()\nmain()\n"},
            {"text": "\n--- End of content ---"},
        ],
    }
    chat = root / "tmp" / "myproj" / "chats" / CHAT_NAME
    chat.parent.mkdir(parents=True)
    chat.write_bytes(line(METADATA) + line(expanded))

    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert [e.content for e in events(data_dir)] == ["why does @src/app.py crash on start?"]
