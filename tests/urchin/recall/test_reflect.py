"""The reflection digest, its deterministic summary, and the optional chat endpoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support import free_port
from tests.urchin.recall.test_semantic import OpenAIStub
from urchin.event import Actor, Event, EventKind
from urchin.recall.reflect import (
    AGENT_SOURCE,
    MAX_EVENT_CHARS,
    MAX_PROMPT_CHARS,
    Reflection,
    build_digest,
    deterministic_summary,
    find_thread,
    reflect,
    reflection_event,
    render,
)

NOW = datetime(2026, 5, 4, 20, 0, tzinfo=UTC)


def at(minutes_ago: int, content: str, source: str = "claude", **fields: Any) -> Event:
    return Event.create(content, source, timestamp=NOW - timedelta(minutes=minutes_ago), **fields)


def window() -> list[Event]:
    return [
        at(5, "Looked at the flaky login test in auth/test_login.py", workspace="/dev/app"),
        at(
            10,
            "pytest tests/auth -x\nFAILED tests/auth/test_login.py::test_redirect",
            "shell",
            kind="command",
            workspace="/dev/app",
        ),
        at(
            20,
            "Use a fresh session fixture per login test",
            "mcp",
            kind="decision",
            workspace="/dev/app",
        ),
        at(30, "Should the docs site move to the new theme?", "copilot", workspace="/dev/docs"),
        at(40, "Refactored the css of the pricing page", "claude", workspace="/dev/docs"),
        at(50, "TODO: pin the playwright version", "codex", workspace="/dev/app"),
        at(60, "Reflection on: login\nold digest", AGENT_SOURCE, kind="agent"),
    ]


def test_digest_counts_sources_and_workspaces_and_ignores_earlier_reflections() -> None:
    digest = build_digest("fix the flaky login test", window(), hours=24, limit=30)
    assert digest.considered == 6
    assert dict(digest.by_source) == {"claude": 2, "shell": 1, "mcp": 1, "copilot": 1, "codex": 1}
    assert digest.by_source[0] == ("claude", 2)
    assert digest.by_workspace == [("/dev/app", 4), ("/dev/docs", 2)]
    assert digest.workspaces == 2
    assert all(item.event.source != AGENT_SOURCE for item in digest.relevant)


def test_digest_lists_decisions_and_open_threads_newest_first() -> None:
    digest = build_digest("anything", window(), hours=24, limit=30)
    assert [event.content for event in digest.decisions] == [
        "Use a fresh session fixture per login test"
    ]
    reasons = [(thread.reason, thread.event.source) for thread in digest.open_threads]
    assert reasons == [("failure", "shell"), ("question", "copilot"), ("todo", "codex")]
    assert digest.open_threads[0].line.startswith("FAILED tests/auth/test_login.py")


def test_relevant_events_are_ranked_by_goal_overlap_then_recency() -> None:
    digest = build_digest("fix the flaky login test", window(), hours=24, limit=3)
    assert len(digest.relevant) == 3
    assert digest.relevant[0].event.content.startswith("Looked at the flaky login test")
    scores = [item.score for item in digest.relevant]
    assert scores == sorted(scores, reverse=True)
    assert digest.matched_goal == 3  # the three events that mention login / test
    unrelated = build_digest("kubernetes", window(), hours=24, limit=2)
    assert unrelated.matched_goal == 0
    # Nothing shares a term: the newest events are listed, scored zero.
    assert [item.score for item in unrelated.relevant] == [0.0, 0.0]
    assert unrelated.relevant[0].event.timestamp == NOW - timedelta(minutes=5)


@pytest.mark.parametrize(
    ("content", "meta", "reason"),
    [
        ("cargo build\nerror: could not compile `urchin`", None, "failure"),
        ("Traceback (most recent call last):", None, "failure"),
        ("make test", {"exit_code": 2}, "failure"),
        ("FIXME: the parser drops the tail", None, "todo"),
        ("we still need to wire the intake token", None, "todo"),
        ("Why does the index rebuild on every start?", None, "question"),
        ("How about it? TODO later", None, "todo"),
    ],
)
def test_find_thread_spots_failures_todos_and_questions(
    content: str, meta: dict[str, int] | None, reason: str
) -> None:
    thread = find_thread(at(1, content, "shell", meta=meta))
    assert thread is not None
    assert thread.reason == reason


@pytest.mark.parametrize(
    ("content", "meta"),
    [("Refactored the error handling module", None), ("ls -la", {"exit_code": 0}), ("ok?", None)],
)
def test_find_thread_leaves_finished_work_alone(content: str, meta: dict[str, int] | None) -> None:
    assert find_thread(at(1, content, "shell", meta=meta)) is None


def test_deterministic_summary_restates_the_digest() -> None:
    digest = build_digest("fix the flaky login test", window(), hours=24, limit=30)
    summary = deterministic_summary(digest)
    assert "6 events in the last 24h from 5 sources (claude 2" in summary
    assert "across 2 workspaces (/dev/app 4, /dev/docs 2)" in summary
    assert "1 decisions; latest: Use a fresh session fixture" in summary
    assert "3 open threads (1 failure, 1 question, 1 todo)" in summary
    assert "Most relevant: [claude] Looked at the flaky login test" in summary
    empty = build_digest("anything", [], hours=12, limit=5)
    assert deterministic_summary(empty) == "No events in the last 12h."


def test_reflect_without_a_chat_endpoint_uses_the_digest() -> None:
    result = reflect("fix the flaky login test", window(), hours=24, limit=5)
    assert result.summary_source == "digest"
    assert result.note is None
    assert result.summary == deterministic_summary(result.digest)


def test_reflect_asks_the_chat_endpoint_with_a_bounded_prompt() -> None:
    huge = [at(i, f"login test note {i} " + "z" * 20_000) for i in range(50)]
    with OpenAIStub(chat_reply="  - Pin the session fixture.  ") as stub:
        result = reflect(
            "fix the flaky login test",
            huge,
            hours=24,
            limit=50,
            chat_url=stub.url,
            chat_model="tiny",
        )
    assert result.summary_source == "model"
    assert result.summary == "- Pin the session fixture."
    assert result.note is None
    [(path, body)] = stub.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "tiny"
    system, user = body["messages"]
    assert system["role"] == "system"
    assert user["role"] == "user"
    assert "fix the flaky login test" in user["content"]
    assert len(user["content"]) <= MAX_PROMPT_CHARS


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ({"fail": 503}, "the chat endpoint answered HTTP 503"),
        ({"garbage": True}, "without a message"),
    ],
)
def test_reflect_falls_back_to_the_digest_when_the_chat_endpoint_fails(
    broken: dict[str, Any], expected: str
) -> None:
    with OpenAIStub(**broken) as stub:
        result = reflect("login", window(), hours=24, limit=5, chat_url=stub.url)
    assert result.summary_source == "digest"
    assert result.summary == deterministic_summary(result.digest)
    assert result.note is not None
    assert expected in result.note
    assert "deterministic digest" in result.note


def test_reflect_falls_back_when_the_chat_endpoint_is_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = reflect("login", window(), hours=24, limit=5, chat_url=url, timeout=2)
    assert result.summary_source == "digest"
    assert result.note is not None
    assert "could not reach the chat endpoint" in result.note


def test_reflection_event_is_an_agent_event_that_reads_back() -> None:
    result = reflect("fix the flaky login test", window(), hours=24, limit=5)
    actor = Actor(account="tester", device="box")
    event = reflection_event(result, actor=actor, now=NOW)
    assert event.kind is EventKind.AGENT
    assert event.source == AGENT_SOURCE
    assert event.tags == ("reflection",)
    assert event.actor == actor
    assert event.title == "Reflection: fix the flaky login test"
    assert event.content.startswith("Reflection on: fix the flaky login test")
    assert result.summary in event.content
    assert "Decisions:\n- 2026-05-04T19:40:00Z [mcp] Use a fresh session fixture" in event.content
    assert "Open threads:" in event.content
    assert Event.from_line(event.to_line()) == event


def test_render_and_recorded_event_stay_bounded() -> None:
    goal = "g" * 2000
    events = [at(i, "g " * 10_000, workspace="/w") for i in range(100)]
    result = reflect(goal, events, hours=24, limit=100)
    assert len(reflection_event(result).content) <= MAX_EVENT_CHARS
    noted = Reflection(result.digest, "s", "digest", note="the chat endpoint answered HTTP 500")
    assert "Note: the chat endpoint answered HTTP 500" in render(noted)
