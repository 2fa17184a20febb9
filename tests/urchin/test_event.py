from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urchin.errors import MalformedEventError, UsageError
from urchin.event import Actor, Event, EventKind, OtherKind, format_timestamp, parse_kind

SPEC_LINE = (
    '{"id":"56816532-adb7-4000-8a0f-1dda8408aab5","timestamp":"2026-05-04T20:00:00Z",'
    '"source":"copilot","kind":"conversation","content":"Hardened intake auth.",'
    '"workspace":"/home/user/dev/project","tags":["substrate"]}'
)


def test_spec_example_line_round_trips_byte_identically() -> None:
    event = Event.from_line(SPEC_LINE)
    assert event.source == "copilot"
    assert event.kind is EventKind.CONVERSATION
    assert event.to_line() == SPEC_LINE.encode("utf-8") + b"\n"


def test_full_event_keeps_key_order_and_omits_nulls() -> None:
    event = Event(
        id=uuid.UUID("11111111-2222-4333-8444-555555555555"),
        timestamp=datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
        source="git",
        kind=EventKind.COMMIT,
        content="fix: café ☕",
        workspace="/w",
        session="main",
        title="fix",
        tags=("a", "b"),
        actor=Actor(account="u", device="d", node_id="ab"),
        meta={"amount": 3.5, "currency": None},
    )
    line = event.to_line().decode("utf-8")
    assert list(json.loads(line)) == [
        "id",
        "timestamp",
        "source",
        "kind",
        "content",
        "workspace",
        "session",
        "title",
        "tags",
        "actor",
        "meta",
    ]
    assert '"timestamp":"2026-01-02T03:04:05.123Z"' in line
    assert "café ☕" in line  # non-ASCII stays UTF-8
    assert "null" not in line
    assert '"actor":{"account":"u","device":"d","node_id":"ab"}' in line


def test_empty_tags_and_missing_optionals_are_left_out() -> None:
    event = Event.create("hello", "cli")
    data = json.loads(event.to_line())
    assert set(data) == {"id", "timestamp", "source", "kind", "content"}
    assert uuid.UUID(data["id"]).version == 4
    assert data["timestamp"].endswith("Z")


def test_other_kind_is_written_in_the_tagged_form_and_both_forms_read() -> None:
    event = Event.create("x", "cli", "other_thing")
    assert event.kind == OtherKind("other_thing")
    assert json.loads(event.to_line())["kind"] == {"other": "other_thing"}
    assert parse_kind({"other": "other_thing"}) == OtherKind("other_thing")
    assert parse_kind("other_thing") == OtherKind("other_thing")
    assert parse_kind("Commit") is EventKind.COMMIT


def test_unknown_fields_are_ignored_on_read() -> None:
    data = json.loads(SPEC_LINE)
    data["brand_new_field"] = {"nested": [1, 2]}
    assert Event.from_json(data) == Event.from_line(SPEC_LINE)


@pytest.mark.parametrize("missing", ["id", "timestamp", "source", "kind", "content"])
def test_lines_missing_required_fields_are_rejected(missing: str) -> None:
    data = json.loads(SPEC_LINE)
    del data[missing]
    with pytest.raises(MalformedEventError, match=missing):
        Event.from_json(data)


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1,2]",
        b'{"id":"nope","timestamp":"2026-05-04T20:00:00Z","source":"s","kind":"agent","content":"c"}',
        b'{"id":"56816532-adb7-4000-8a0f-1dda8408aab5","timestamp":"yesterday","source":"s",'
        b'"kind":"agent","content":"c"}',
        b'{"id":"56816532-adb7-4000-8a0f-1dda8408aab5","timestamp":"2026-05-04T20:00:00",'
        b'"source":"s","kind":"agent","content":"c"}',
        b'{"id":"56816532-adb7-4000-8a0f-1dda8408aab5","timestamp":"2026-05-04T20:00:00Z",'
        b'"source":"s","kind":"agent","content":"c","tags":"x"}',
        b"\xff\xfe garbage",
    ],
)
def test_malformed_lines_raise_one_error_type(line: bytes) -> None:
    with pytest.raises(MalformedEventError):
        Event.from_line(line)


def test_offsets_are_converted_to_utc() -> None:
    data = json.loads(SPEC_LINE)
    data["timestamp"] = "2026-05-04T22:00:00+02:00"
    assert format_timestamp(Event.from_json(data).timestamp) == "2026-05-04T20:00:00Z"


@pytest.mark.parametrize(("content", "source"), [("  ", "cli"), ("x", " "), ("", "")])
def test_create_rejects_blank_content_or_source(content: str, source: str) -> None:
    with pytest.raises(UsageError, match="must not be blank"):
        Event.create(content, source)


def test_lone_surrogates_still_produce_a_valid_line() -> None:
    event = Event.from_json({**json.loads(SPEC_LINE), "content": "bad \ud800 half"})
    assert Event.from_line(event.to_line()) == event


_text = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
_opt = st.none() | _text
_json_scalar = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | _text
_kinds = st.sampled_from(list(EventKind)) | st.builds(
    OtherKind,
    st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True).filter(
        lambda s: s not in {k.value for k in EventKind}
    ),
)
_timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
_events = st.builds(
    Event,
    id=st.uuids(),
    timestamp=_timestamps,
    source=_text,
    kind=_kinds,
    content=st.text(max_size=200),
    brain=_opt,
    workspace=_opt,
    session=_opt,
    title=_opt,
    tags=st.lists(st.text(max_size=10), max_size=4).map(tuple),
    actor=st.none() | st.builds(Actor, account=_text, device=_text, workspace=_opt, node_id=_opt),
    meta=st.none()
    | st.dictionaries(st.text(min_size=1, max_size=8), _json_scalar, min_size=1, max_size=4).filter(
        lambda m: any(v is not None for v in m.values())
    ),
)


def _normalised(event: Event) -> Event:
    meta = {k: v for k, v in (event.meta or {}).items() if v is not None} or None
    return Event(**{**{f: getattr(event, f) for f in Event.__slots__}, "meta": meta})


@given(_events)
def test_any_event_round_trips(event: Event) -> None:
    line = event.to_line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    parsed = Event.from_line(line)
    assert parsed == _normalised(event)
    assert parsed.to_line() == line


def test_timestamps_that_leave_the_calendar_in_utc_are_malformed() -> None:
    data = {**json.loads(SPEC_LINE), "timestamp": "0001-01-01T00:00:00+01:00"}
    with pytest.raises(MalformedEventError, match="out of range"):
        Event.from_json(data)


def _encoder_line(event: Event) -> bytes:
    """The journal line as the JSON encoder writes :meth:`Event.to_json` (the contract)."""
    data = event.to_json()
    try:
        return (json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(data, separators=(",", ":")) + "\n").encode("ascii")


_any_text = st.text(max_size=30)  # quotes, controls, non-ASCII and lone surrogates included


@given(
    _events.flatmap(
        lambda event: st.builds(
            lambda content, workspace, tags: Event(
                **{
                    **{f: getattr(event, f) for f in Event.__slots__},
                    "content": content,
                    "workspace": workspace,
                    "tags": tags,
                }
            ),
            _any_text,
            st.none() | _any_text,
            st.lists(_any_text, max_size=3).map(tuple),
        )
    )
)
def test_line_is_byte_for_byte_what_the_json_encoder_writes(event: Event) -> None:
    assert event.to_line() == _encoder_line(event)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 5, 4, 20, 0, 0, tzinfo=UTC), "2026-05-04T20:00:00Z"),
        (datetime(2026, 5, 4, 20, 0, 0, 120000, tzinfo=UTC), "2026-05-04T20:00:00.120Z"),
        (datetime(2026, 5, 4, 20, 0, 0, 1, tzinfo=UTC), "2026-05-04T20:00:00.000001Z"),
        (datetime(999, 1, 2, 3, 4, 5, 6000, tzinfo=UTC), "0999-01-02T03:04:05.006Z"),
    ],
)
def test_timestamps_are_written_with_as_many_digits_as_needed(
    moment: datetime, expected: str
) -> None:
    assert format_timestamp(moment) == expected


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.timezones()
    )
)
def test_timestamp_format_matches_isoformat_in_utc(moment: datetime) -> None:
    utc = moment.astimezone(UTC)
    spec = (
        "seconds"
        if utc.microsecond == 0
        else "milliseconds"
        if utc.microsecond % 1000 == 0
        else "microseconds"
    )
    assert format_timestamp(moment) == utc.isoformat(timespec=spec).replace("+00:00", "Z")


def test_create_keeps_a_utc_time_and_converts_other_offsets() -> None:
    moment = datetime(2026, 5, 4, 22, 0, tzinfo=UTC)
    assert Event.create("c", "s", timestamp=moment).timestamp is moment
    local = datetime.fromisoformat("2026-05-04T22:00:00+02:00")
    converted = Event.create("c", "s", timestamp=local).timestamp
    assert converted == moment.replace(hour=20) and converted.tzinfo is UTC


def test_event_constructor_takes_every_field_with_its_default() -> None:
    import dataclasses
    import inspect

    params = list(inspect.signature(Event).parameters.values())
    declared = dataclasses.fields(Event)
    assert [p.name for p in params] == [f.name for f in declared]
    for param, declared_field in zip(params, declared, strict=True):
        expected = (
            inspect.Parameter.empty
            if declared_field.default is dataclasses.MISSING
            else declared_field.default
        )
        assert param.default == expected, param.name


def test_events_stay_immutable_and_replace_builds_a_new_one() -> None:
    import dataclasses

    event = Event.from_line(SPEC_LINE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.content = "changed"  # type: ignore[misc]
    changed = dataclasses.replace(event, content="changed", tags=())
    assert changed.content == "changed" and changed.tags == () and event.tags == ("substrate",)
    assert changed.id == event.id and changed.timestamp == event.timestamp
    assert changed != event


def test_formatting_one_time_again_or_another_time_in_between_gives_each_its_own_text() -> None:
    first = datetime(2026, 5, 4, 20, 0, 0, 120000, tzinfo=UTC)
    other = datetime.fromisoformat("2026-05-04T22:00:01+02:00")
    expected = {id(first): "2026-05-04T20:00:00.120Z", id(other): "2026-05-04T20:00:01Z"}
    for moment in (first, first, other, other, first, other):
        assert format_timestamp(moment) == expected[id(moment)]
