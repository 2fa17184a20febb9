"""Building the index: the fast line decoder agrees with Event.from_json, pieces of the
journal split like the scan splits them, the index costs less than the journal, and a
long first build says what it is doing."""

from __future__ import annotations

import json
import logging
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urchin import query
from urchin.errors import MalformedEventError
from urchin.event import Event
from urchin.journal import Journal
from urchin.query import index
from urchin.query.build import event_fields, micros, read_region

_text = st.text(max_size=8)
_maybe_text = st.one_of(st.none(), _text, st.integers(), st.booleans())
_ids = st.one_of(
    st.uuids(version=4).map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.uuids().map(lambda u: u.hex),
    st.sampled_from(["", "not-a-uuid", "{12345678-1234-5678-1234-567812345678}"]),
    st.integers(),
)
_stamps = st.one_of(
    st.sampled_from(
        [
            "2026-05-01T10:00:00Z",
            "2026-05-01T10:00:00.123456+02:00",
            " 2026-05-01T10:00:00Z ",
            "2026-05-01T10:00:00",
            "yesterday",
            "0001-01-01T00:00:00+01:00",
        ]
    ),
    st.integers(),
    st.none(),
)
_kinds = st.one_of(
    st.sampled_from(["conversation", "commit", "Commit", " agent ", "", "   ", "custom"]),
    st.fixed_dictionaries({"other": st.sampled_from(["x", " ", 3])}),
    st.integers(),
    st.none(),
)
_actors = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"account": _maybe_text, "device": _maybe_text},
        optional={"workspace": _maybe_text, "node_id": _maybe_text},
    ),
    st.integers(),
)
_objects = st.fixed_dictionaries(
    {},
    optional={
        "id": _ids,
        "timestamp": _stamps,
        "source": _maybe_text,
        "kind": _kinds,
        "content": _maybe_text,
        "workspace": _maybe_text,
        "title": _maybe_text,
        "session": _maybe_text,
        "brain": _maybe_text,
        "tags": st.one_of(st.none(), st.lists(_maybe_text, max_size=3), _text),
        "actor": _actors,
        "meta": st.one_of(st.none(), st.just({"a": 1}), st.just([1]), st.just("m")),
    },
)


@settings(max_examples=400, deadline=None)
@given(obj=st.one_of(_objects, st.lists(st.integers(), max_size=2), st.integers()))
def test_fast_decoder_accepts_exactly_what_event_from_json_accepts(obj: object) -> None:
    line = json.dumps(obj).encode("utf-8")
    try:
        event = Event.from_json(obj)
    except MalformedEventError:
        with pytest.raises(MalformedEventError):
            event_fields(line)
        return
    ts, source, workspace, content, title, tags = event_fields(line)
    assert ts == micros(event.timestamp)
    assert (source, workspace, content, title) == (
        event.source,
        event.workspace,
        event.content,
        event.title,
    )
    assert tuple(tags) == event.tags


def test_lines_that_are_not_json_are_malformed() -> None:
    for line in (b"not json", b'{"id": ', b"\xff\xfe", b"NaN-ish {"):
        with pytest.raises(MalformedEventError):
            event_fields(line)


def test_pieces_split_like_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [Event.create(f"event {n}", "cli").to_line() for n in range(5)]
    body = lines[0] + b"\n   \n" + lines[1] + b"garbage\n" + lines[2] + lines[3] + b'{"torn'
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        seen: list[int] = []
        start, region = 0, None
        # A budget smaller than a line still moves on by whole lines.
        while region is None or not region.exhausted:
            region = read_region(fd, start, 40)
            seen += [offset for offset, _ in region.lines]
            start = region.end
        assert region.torn
        whole = read_region(fd, 0, 1 << 20)
    finally:
        os.close(fd)
    scan = Journal(path).scan()
    entries = list(scan)
    # Every non-blank line is offered (the garbage too, to be counted as malformed).
    assert seen == [offset for offset, _ in whole.lines]
    assert [e.offset for e in entries] == [o for o, line in whole.lines if line != b"garbage"]
    assert whole.end == scan.stats.end_offset == len(body) - len(b'{"torn')
    assert whole.torn == scan.stats.torn_tail


def _journal(path: Path, count: int) -> Journal:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    words = ["deploy", "index", "journal", "refactor", "review", "bugfix", "release"]
    with open(path, "wb") as handle:
        for n in range(count):
            handle.write(
                Event.create(
                    f"{words[n % 7]} step {n} of the rollout for service-{n % 13} "
                    + "details " * 20,
                    ("claude", "git", "shell")[n % 3],
                    event_id=uuid.UUID(int=n, version=4),
                    timestamp=base + timedelta(seconds=n),
                    workspace=f"/home/dev/project-{n % 9}",
                    title=f"Session {n // 40}" if n % 3 == 0 else None,
                    tags=("ops",) if n % 4 == 0 else (),
                ).to_line()
            )
    return Journal(path)


def test_index_costs_less_than_one_and_a_half_journals(tmp_path: Path) -> None:
    journal = _journal(tmp_path / "events.jsonl", 6000)
    status = index.rebuild(journal)
    index.close_pooled()  # checkpoint the write-ahead log into the file
    assert status.events == 6000
    db = index.index_path(journal)
    size = db.stat().st_size + (os.path.getsize(f"{db}-wal") if Path(f"{db}-wal").exists() else 0)
    assert size <= 1.5 * journal.path.stat().st_size
    found = query.search(journal, "SERVICE-7 ", 5)
    assert found.matched == query.linear_search(journal, "SERVICE-7 ", 5).matched > 0


def test_first_query_on_a_large_journal_logs_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    journal = _journal(tmp_path / "events.jsonl", 3000)
    monkeypatch.setattr(index, "PROGRESS_FROM_BYTES", 100_000)
    monkeypatch.setattr(index, "CHUNK_BYTES", 50_000)
    monkeypatch.setattr(index, "_PROGRESS_EVERY", 0.0)
    with caplog.at_level(logging.WARNING, logger="urchin.query.index"):
        assert query.count(journal) == 3000
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith(f"indexing the journal at {journal.path}")
    assert any(message.startswith("indexing the journal: ") for message in messages[1:])
    assert messages[-1].startswith("indexed the journal in")
    # Caught up: the next query has nothing to say.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="urchin.query.index"):
        assert query.count(journal) == 3000
    assert caplog.records == []


def test_small_catch_ups_are_silent(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    journal = _journal(tmp_path / "events.jsonl", 200)
    with caplog.at_level(logging.WARNING, logger="urchin.query.index"):
        assert query.count(journal) == 200
    assert caplog.records == []
