"""Claude Code collector against transcripts and history shaped like the real files."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CheckpointStore, CollectResult
from urchin.collectors.claude import ClaudeCollector, default_root, transcript_items
from urchin.collectors.tail import FileTail
from urchin.errors import UrchinError
from urchin.event import Event, EventKind

SESSION = "11111111-2222-4333-8444-555555555555"
CWD = "/home/u/app"


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin"


@pytest.fixture
def root(isolated_home: Path) -> Path:
    return isolated_home / ".claude"


def collect(
    root: Path, data_dir: Path, store: CheckpointStore | None = None, **options: Any
) -> CollectResult:
    return run_once(ClaudeCollector(root, **options), data_dir, store)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def envelope(kind: str, uuid: str, second: int, **extra: Any) -> dict[str, Any]:
    """A user/assistant line with the envelope every transcript line carries."""
    return {
        "type": kind,
        **extra,
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": SESSION,
        "timestamp": f"2026-05-01T10:00:{second:02d}.000Z",
        "cwd": CWD,
        "gitBranch": "main",
        "version": "2.0.1",
        "isSidechain": False,
        "userType": "external",
    }


def prompt(uuid: str, second: int, text: str) -> dict[str, Any]:
    return envelope("user", uuid, second, message={"role": "user", "content": text})


def assistant(uuid: str, second: int, message_id: str, blocks: list[Any]) -> dict[str, Any]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": blocks,
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return envelope("assistant", uuid, second, message=message, requestId="req_1")


def tool_result(uuid: str, second: int, tool_id: str, output: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": False}
    return envelope("user", uuid, second, message={"role": "user", "content": [block]})


BASH_LS = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
# The line a crashed writer leaves half written; its first bytes are the recipe's torn line.
TORN = line(prompt("u-torn", 30, "now run the tests"))
assert TORN.startswith(b'{"type":"user","mess')


def transcript_fixture() -> bytes:
    return b"".join(
        [
            line({"type": "summary", "summary": "Listing files", "leafUuid": "u3"}),
            line(prompt("u1", 1, "list the files")),
            line(assistant("u2", 2, "msg_1", [{"type": "text", "text": "Listing."}, BASH_LS])),
            # The same API message again (split or re-written): nothing new in it.
            line(assistant("u3", 3, "msg_1", [BASH_LS])),
            line(tool_result("u4", 4, "toolu_1", "README.md\nsrc\n")),
            line({"type": "ai-title", "aiTitle": "List files", "sessionId": SESSION}),
            TORN[:20],
        ]
    )


def write_transcript(root: Path, data: bytes, name: str = SESSION) -> Path:
    path = root / "projects" / "-home-u-app" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


HISTORY_FIXTURE = b"".join(
    [
        line({"display": "/clear", "pastedContents": {}, "timestamp": 1777629600000, "project": CWD,
              "sessionId": SESSION}),
        line({"display": "review [Pasted text #1 +40 lines]",
              "pastedContents": {"1": {"id": 1, "type": "text", "contentHash": "ab12cd"}},
              "timestamp": 1777629700000, "project": CWD, "sessionId": SESSION}),
        line({"display": "explain the build", "pastedContents": {}, "timestamp": 1777629800000,
              "project": "/home/u/other"}),
    ]
)  # fmt: skip


# -- first run ----------------------------------------------------------------------------


def test_first_run_turns_prompts_text_and_shell_commands_into_events(
    root: Path, data_dir: Path
) -> None:
    write_transcript(root, transcript_fixture())

    result = collect(root, data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [(e.kind, e.content) for e in got] == [
        (EventKind.CONVERSATION, "list the files"),
        (EventKind.AGENT, "Listing."),
        (EventKind.COMMAND, "ls"),
    ]
    assert {e.source for e in got} == {"claude"}
    assert {e.workspace for e in got} == {CWD}
    assert {e.session for e in got} == {SESSION}
    assert got[0].timestamp.isoformat() == "2026-05-01T10:00:01+00:00"
    assert got[2].title == "tool: Bash"
    assert got[0].actor is not None and got[0].actor.workspace == CWD
    # summary, the repeated message, the tool result and ai-title were read and skipped
    assert result.new == 3 and result.skipped >= 4


def test_history_skips_slash_commands_and_keeps_prompts_without_session(
    root: Path, data_dir: Path
) -> None:
    root.mkdir()
    (root / "history.jsonl").write_bytes(HISTORY_FIXTURE)

    result = collect(root, data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [(e.source, e.content, e.workspace, e.session) for e in got] == [
        ("claude-cli", "review [Pasted text #1 +40 lines]", CWD, SESSION),
        ("claude-cli", "explain the build", "/home/u/other", None),
    ]
    assert got[0].timestamp.isoformat() == "2026-05-01T10:01:40+00:00"


def test_prompt_in_both_history_and_transcript_is_recorded_once(root: Path, data_dir: Path) -> None:
    write_transcript(root, transcript_fixture())
    # history.jsonl is written when the prompt is submitted, a moment before the line.
    (root / "history.jsonl").write_bytes(
        line({"display": "list the files", "timestamp": 1777629600500, "project": CWD})
    )

    collect(root, data_dir)
    collect(root, data_dir)

    prompts = [e for e in events(data_dir) if e.content == "list the files"]
    assert [(e.source, e.kind) for e in prompts] == [("claude", EventKind.CONVERSATION)]


def test_history_read_before_the_transcript_still_counts_the_prompt_once(
    root: Path, data_dir: Path
) -> None:
    root.mkdir()
    (root / "history.jsonl").write_bytes(
        line({"display": "list the files", "timestamp": 1777629600500, "project": CWD})
    )
    collect(root, data_dir)
    write_transcript(root, transcript_fixture())

    collect(root, data_dir)

    assert [e.source for e in events(data_dir) if e.content == "list the files"] == ["claude-cli"]


def test_missing_folder_is_a_no_op(root: Path, data_dir: Path) -> None:
    result = collect(root, data_dir)

    assert not result.available
    assert events(data_dir) == []
    assert not (data_dir / "checkpoints" / "claude.json").exists()


def test_default_root_follows_claude_config_dir(isolated_home: Path) -> None:
    assert default_root({"HOME": str(isolated_home)}) == isolated_home / ".claude"
    assert default_root({"CLAUDE_CONFIG_DIR": "/srv/claude", "HOME": "/x"}) == Path("/srv/claude")


# -- incremental reading ----------------------------------------------------------------------


def test_incremental_run_completes_the_torn_line_and_reads_new_lines_only(
    root: Path, data_dir: Path
) -> None:
    path = write_transcript(root, transcript_fixture())
    collect(root, data_dir)

    append(
        path,
        TORN[20:]
        + line(assistant("u6", 31, "msg_2", [{"type": "thinking", "thinking": "hmm"}]))
        + line(assistant("u7", 32, "msg_2", [{"type": "text", "text": "Tests pass."}])),
    )
    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert result.new == 2
    assert [e.content for e in events(data_dir)][3:] == ["now run the tests", "Tests pass."]


def test_rerun_without_changes_adds_nothing(root: Path, data_dir: Path) -> None:
    write_transcript(root, transcript_fixture())
    collect(root, data_dir)
    before = events(data_dir)

    again = collect(root, data_dir)

    assert again.ok and again.new == 0
    assert events(data_dir) == before


def test_new_session_files_are_found_on_later_runs(root: Path, data_dir: Path) -> None:
    write_transcript(root, transcript_fixture())
    collect(root, data_dir)

    other = "99999999-2222-4333-8444-555555555555"
    write_transcript(root, line(prompt("v1", 40, "second session")), name=other)
    result = collect(root, data_dir)

    assert result.new == 1
    assert events(data_dir)[-1].content == "second session"


def test_restored_old_checkpoint_neither_loses_nor_duplicates(root: Path, data_dir: Path) -> None:
    path = write_transcript(root, transcript_fixture())
    collect(root, data_dir)
    checkpoint = data_dir / "checkpoints" / "claude.json"
    old = checkpoint.read_bytes()
    append(path, TORN[20:] + line(prompt("u8", 40, "and deploy")))
    collect(root, data_dir)
    after = [e.id for e in events(data_dir)]

    checkpoint.write_bytes(old)  # as if the run crashed after appending, before saving
    result = collect(root, data_dir)

    assert result.ok and result.new == 0
    assert [e.id for e in events(data_dir)] == after
    assert len(after) == len(set(after)) == 5


def test_failed_checkpoint_save_is_reported_and_repaired_next_run(
    root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_transcript(root, transcript_fixture())
    calls: list[str] = []

    def save_then_fail(self: CheckpointStore, name: str, state: dict[str, Any]) -> None:
        calls.append(name)
        raise UrchinError("cannot write checkpoint: disk full")

    with monkeypatch.context() as patch:
        patch.setattr(CheckpointStore, "save", save_then_fail)
        failed = collect(root, data_dir)
    assert failed.errors == ["cannot write checkpoint: disk full"]
    assert failed.new == 3  # appended, but not checkpointed

    result = collect(root, data_dir)

    assert result.ok and result.new == 0
    assert len(events(data_dir)) == 3


# -- replaced, truncated, unreadable, malformed ---------------------------------------------------


def test_replaced_transcript_is_reread_without_duplicates(root: Path, data_dir: Path) -> None:
    path = write_transcript(root, transcript_fixture())
    collect(root, data_dir)

    replacement = path.with_name("tmp.part")
    replacement.write_bytes(transcript_fixture()[: -len(TORN[:20])] + line(prompt("u9", 50, "hi")))
    os.replace(replacement, path)
    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert [e.content for e in events(data_dir)] == ["list the files", "Listing.", "ls", "hi"]


def test_truncated_transcript_is_reread_from_the_start(root: Path, data_dir: Path) -> None:
    path = write_transcript(root, transcript_fixture())
    collect(root, data_dir)

    path.write_bytes(line(prompt("u1", 1, "list the files")) + line(prompt("w1", 60, "fresh")))
    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert [e.content for e in events(data_dir)] == ["list the files", "Listing.", "ls", "fresh"]


def test_rewritten_transcript_skips_new_lines_older_than_what_was_read(
    root: Path, data_dir: Path
) -> None:
    path = write_transcript(
        root, line(prompt("a1", 10, "first")) + line(prompt("a2", 20, "second"))
    )
    collect(root, data_dir)

    # New ids, so only their time tells the first two were read already.
    path.write_bytes(
        line(prompt("b1", 5, "older, never seen"))
        + line(assistant("b2", 15, "msg_b2", [{"type": "text", "text": "also older"}]))
        + line(prompt("b3", 30, "newer"))
    )
    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert (result.new, result.skipped) == (1, 2)
    assert [e.content for e in events(data_dir)] == ["first", "second", "newer"]


def test_forked_session_repeating_earlier_lines_adds_only_its_new_lines(
    root: Path, data_dir: Path
) -> None:
    write_transcript(root, transcript_fixture())
    collect(root, data_dir)

    fork = "77777777-2222-4333-8444-555555555555"
    copied = transcript_fixture()[: -len(TORN[:20])]
    write_transcript(root, copied + line(prompt("f1", 70, "fork only")), name=fork)
    result = collect(root, data_dir)

    assert result.new == 1
    assert [e.content for e in events(data_dir)][-1] == "fork only"


def test_malformed_lines_are_counted_and_skipped(
    root: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_transcript(
        root, b"{not json\n" + b"\xff\xfe\n" + b"[1,2]\n" + line(prompt("u1", 1, "still read"))
    )

    with caplog.at_level(logging.WARNING, logger="urchin.collectors.claude"):
        result = collect(root, data_dir)

    assert result.ok
    assert [e.content for e in events(data_dir)] == ["still read"]
    assert result.skipped >= 3
    assert "2 malformed lines" in caplog.text
    assert "still read" not in caplog.text


def deny_reading(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make one file unreadable; root ignores modes, so then refuse it in the open call."""
    path.chmod(0)
    if os.geteuid() != 0:
        return
    real_open = FileTail.open

    def guarded(self: FileTail) -> FileTail:
        if self.path == path and not path.stat().st_mode & 0o444:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(self)

    monkeypatch.setattr(FileTail, "open", guarded)


def test_unreadable_transcript_is_reported_and_read_once_readable(
    root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = write_transcript(root, transcript_fixture())
    other = write_transcript(root, line(prompt("v1", 40, "other")), name="other-session")
    deny_reading(locked, monkeypatch)

    result = collect(root, data_dir)

    assert result.errors == [f"cannot read {locked}: Permission denied"]
    assert [e.content for e in events(data_dir)] == ["other"]

    locked.chmod(0o600)
    append(other, line(prompt("v2", 41, "more")))
    later = collect(root, data_dir)

    assert later.ok, later.errors
    assert sorted(e.content for e in events(data_dir)) == [
        "Listing.",
        "list the files",
        "ls",
        "more",
        "other",
    ]


def test_oversized_line_is_skipped_without_loading_it(root: Path, data_dir: Path) -> None:
    huge = tool_result("u5", 5, "toolu_1", "x" * 300_000)
    write_transcript(
        root,
        transcript_fixture()[: -len(TORN[:20])]
        + line(huge)
        + line(prompt("u6", 6, "after the big one")),
    )

    result = collect(root, data_dir, max_line_bytes=64 * 1024)

    assert result.ok
    assert [e.content for e in events(data_dir)][-1] == "after the big one"


def test_long_prompt_content_is_capped(root: Path, data_dir: Path) -> None:
    write_transcript(root, line(prompt("u1", 1, "y" * 50_000)))

    collect(root, data_dir)

    (event,) = events(data_dir)
    assert len(event.content) == 4096 and event.content.endswith("…")


# -- what counts as a prompt -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (prompt("a", 1, "<command-name>/clear</command-name>"), []),
        (prompt("a", 1, "<local-command-stdout>done</local-command-stdout>"), []),
        (prompt("a", 1, "[Request interrupted by user]"), []),
        ({**prompt("a", 1, "Caveat: messages below..."), "isMeta": True}, []),
        (prompt("a", 1, "<bash-input>git status</bash-input>"),
         [(EventKind.COMMAND, "git status")]),
        (
            envelope("user", "a", 1, message={"role": "user", "content": [
                {"type": "text", "text": "what is in"}, {"type": "image", "source": {}}]}),
            [(EventKind.CONVERSATION, "what is in")],
        ),
        (
            assistant("a", 1, "m", [{"type": "tool_use", "id": "t", "name": "Edit",
                                      "input": {"file_path": "/w/a.py", "old_string": "x"}}]),
            [(EventKind.FILE, "/w/a.py")],
        ),
        (
            assistant("a", 1, "m", [{"type": "tool_use", "id": "t", "name": "Grep",
                                      "input": {"pattern": "TODO", "path": "src"}}]),
            [(EventKind.AGENT, "path: src; pattern: TODO")],
        ),
        ({"type": "system", "subtype": "local_command", "uuid": "a", "content": "x"}, []),
        ({"type": "file-history-snapshot", "messageId": "a", "snapshot": {}}, []),
    ],
)  # fmt: skip
def test_transcript_line_classification(record: dict[str, Any], expected: list[Any]) -> None:
    assert [(i.kind, i.content) for i in transcript_items(record)] == expected


def test_a_tool_use_with_a_blank_name_is_left_out_and_the_run_goes_on(
    root: Path, data_dir: Path
) -> None:
    nameless = assistant("a1", 1, "m1", [{"type": "tool_use", "id": "t1", "name": "  "}])
    write_transcript(root, line(nameless) + line(prompt("u2", 2, "next prompt")))

    result = collect(root, data_dir)

    assert result.ok, result.errors
    assert [e.content for e in events(data_dir)] == ["next prompt"]


@pytest.mark.parametrize(
    "text",
    [
        "  <bash-input>ls -la</bash-input>  ",
        "\u00a0<bash-input>ls -la</bash-input>",
        "\n<command-name>/review</command-name><command-args>ls -la</command-args>",
    ],
)
def test_markup_after_leading_whitespace_is_still_recognised(text: str) -> None:
    (item,) = transcript_items(prompt("a", 1, text))
    assert item.content in {"ls -la", "/review ls -la"}


def test_subagent_transcripts_are_agent_activity(root: Path, data_dir: Path) -> None:
    write_transcript(root, line(prompt("u1", 1, "find the bug")))
    side = root / "projects" / "-home-u-app" / SESSION / "subagents" / "agent-a1.jsonl"
    side.parent.mkdir(parents=True)
    side.write_bytes(
        line({**prompt("s1", 2, "search for TODOs"), "isSidechain": True})
        + line(assistant("s2", 3, "msg_s", [{**BASH_LS, "id": "toolu_s"}]))
    )
    results = root / "projects" / "-home-u-app" / SESSION / "tool-results" / "toolu_s.jsonl"
    results.parent.mkdir(parents=True)
    results.write_bytes(line(prompt("r1", 4, "not a transcript")))

    collect(root, data_dir)

    got = {(e.kind, e.content, e.title) for e in events(data_dir)}
    assert got == {
        (EventKind.CONVERSATION, "find the bug", None),
        (EventKind.AGENT, "search for TODOs", "subagent prompt"),
        (EventKind.COMMAND, "ls", "tool: Bash"),
    }


def test_deleted_transcripts_leave_the_checkpoint(root: Path, data_dir: Path) -> None:
    path = write_transcript(root, transcript_fixture())
    collect(root, data_dir)
    path.unlink()

    collect(root, data_dir)

    state = json.loads((data_dir / "checkpoints" / "claude.json").read_text(encoding="utf-8"))
    assert state["files"] == {}


def test_urchin_collect_reads_transcripts_through_the_cli(
    root: Path, data_dir: Path, urchin: Any
) -> None:
    write_transcript(root, transcript_fixture())
    (root / "history.jsonl").write_bytes(HISTORY_FIXTURE)

    first = urchin("collect", "claude", "--json")
    again = urchin("collect", "claude", "--json")

    assert first.code == 0, first.stderr
    (report,) = first.json()["collectors"]
    assert (report["name"], report["new"], report["errors"]) == ("claude", 5, [])
    assert again.json()["new"] == 0
    assert [e.source for e in events(data_dir)].count("claude-cli") == 2


# -- slash commands and skills with arguments -----------------------------------------------

SKILL_MARKUP = (
    "<command-message>fix-issue is running…</command-message>\n"
    "<command-name>/fix-issue</command-name>\n"
    "<command-args>the login page returns 500 after signing out</command-args>"
)
BARE_MARKUP = (
    "<command-name>/compact</command-name>\n"
    "<command-message>compact</command-message>\n"
    "<command-args></command-args>"
)


def test_slash_command_with_arguments_is_recorded_as_the_prompt(root: Path, data_dir: Path) -> None:
    expanded = {**prompt("u2", 2, "Base directory for this skill: /home/u/.claude/skills"),
                "isMeta": True}  # fmt: skip
    write_transcript(
        root,
        b"".join(
            [
                line(prompt("u1", 1, SKILL_MARKUP)),
                line(expanded),
                line(prompt("u3", 3, BARE_MARKUP)),
                line(assistant("u4", 4, "msg_1", [{"type": "text", "text": "Looking."}])),
            ]
        ),
    )
    (root / "history.jsonl").write_bytes(
        b"".join(
            [
                line({"display": "/fix-issue the login page returns 500 after signing out",
                      "pastedContents": {}, "timestamp": 1777629601500, "project": CWD,
                      "sessionId": SESSION}),
                line({"display": "/compact", "pastedContents": {}, "timestamp": 1777629603000,
                      "project": CWD, "sessionId": SESSION}),
            ]
        )
    )  # fmt: skip

    result = collect(root, data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [(e.source, e.kind, e.content) for e in got] == [
        (
            "claude",
            EventKind.CONVERSATION,
            "/fix-issue the login page returns 500 after signing out",
        ),
        ("claude", EventKind.AGENT, "Looking."),
    ]
    assert got[0].workspace == CWD and got[0].session == SESSION


def test_skill_markup_in_older_tag_order_is_read_the_same() -> None:
    older = (
        "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
        "<command-args>check the retry logic</command-args>"
    )
    assert [(i.kind, i.content) for i in transcript_items(prompt("a", 1, older))] == [
        (EventKind.CONVERSATION, "/review check the retry logic")
    ]
    assert transcript_items(prompt("a", 1, BARE_MARKUP)) == []
