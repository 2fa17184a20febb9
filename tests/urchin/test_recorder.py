from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from urchin.ephemeral import Ephemeral
from urchin.errors import RedactionError
from urchin.event import Actor, Event
from urchin.journal import Journal
from urchin.recorder import Outcome, Recorder
from urchin.redact import Redactor

SECRET = "ghp_" + "Z9" * 18


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    folder = tmp_path / "client"
    folder.mkdir()
    (folder / ".urchinignore").write_text("", encoding="utf-8")
    return folder


def _lines(journal: Journal) -> list[dict[str, object]]:
    if not journal.path.exists():
        return []
    return [json.loads(line) for line in journal.path.read_bytes().splitlines()]


def test_a_batch_leaves_out_each_event_of_an_ignored_workspace_wherever_it_sits(
    tmp_path: Path, hidden: Path
) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    recorder = Recorder(journal, Ephemeral(tmp_path))
    open_actor = Actor("me", "laptop", str(tmp_path))
    hidden_actor = Actor("me", "laptop", str(hidden))
    events = [
        Event.create("one", "toy", workspace=str(hidden)),
        Event.create("two", "toy", workspace=str(tmp_path), actor=open_actor),
        # The workspace is open, but the actor worked in the ignored folder.
        Event.create("three", "toy", workspace=str(tmp_path), actor=hidden_actor),
        Event.create("four", "toy"),
        Event.create("five", "toy", workspace=str(hidden)),
        Event.create("six", "toy", workspace=str(tmp_path), actor=open_actor),
    ]

    result = recorder.record_batch(events)

    assert (result.outcome, result.written, result.ignored) == (Outcome.OK, 3, 3)
    assert [line["content"] for line in _lines(journal)] == ["two", "four", "six"]


def test_a_batch_of_only_ignored_events_writes_nothing(tmp_path: Path, hidden: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    recorder = Recorder(journal, Ephemeral(tmp_path))

    result = recorder.record_batch(
        [Event.create(f"e{n}", "toy", workspace=str(hidden)) for n in range(3)]
    )

    assert (result.outcome, result.written, result.ignored) == (Outcome.IGNORED, 0, 3)
    assert _lines(journal) == []


def test_a_batch_is_written_redacted_and_in_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    recorder = Recorder(journal, Ephemeral(tmp_path))

    result = recorder.record_batch(
        [Event.create(f"e{n} token {SECRET}", "toy", title=f"t {SECRET}") for n in range(3)]
    )

    assert result.written == 3
    written = journal.path.read_bytes()
    assert SECRET.encode() not in written
    assert [line["content"] for line in _lines(journal)] == [
        f"e{n} token [REDACTED:github_token]" for n in range(3)
    ]


class _BlanksTheSecondEvent(Redactor):
    """Leaves the source of the event with content "second" blank, which no line may hold."""

    def redact_event(self, event: Event) -> Event:
        if event.content == "second":
            return dataclasses.replace(event, source=" ")
        return super().redact_event(event)


def test_an_event_broken_by_redaction_stops_its_whole_batch(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    recorder = Recorder(journal, Ephemeral(tmp_path), _BlanksTheSecondEvent())

    with pytest.raises(RedactionError, match="source"):
        recorder.record_batch(
            [
                Event.create("first", "toy"),
                Event.create("second", "toy"),
                Event.create("third", "toy"),
            ]
        )

    assert _lines(journal) == []
