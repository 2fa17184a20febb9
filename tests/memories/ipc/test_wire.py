"""Frame codec and Wire v1 envelope: round trips, strict decoding, and nothing but ProtocolError."""

from __future__ import annotations

import json
import random
import struct
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.errors import (
    BusyError,
    DeniedError,
    IntegrityError,
    LockedError,
    MemoriesError,
    NotFoundError,
    ProtocolError,
    UnavailableError,
    UsageError,
)
from memories.ipc import (
    MAX_FRAME,
    FrameDecoder,
    WireRequest,
    encode_frame,
    envelope_id,
    error_envelope,
    ok_envelope,
    parse_request,
    parse_response,
)
from memories.ipc.wire import decode_body, frame_length, unix_socket_address
from tests.memories.ipc.support import SECRET, header, raw_frame

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=40,
)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for point in [*points, len(data)]:
        pieces.append(data[start:point])
        start = point
    return pieces


def feed_all(decoder: FrameDecoder, pieces: list[bytes]) -> list[object]:
    values: list[object] = []
    for piece in pieces:
        values.extend(decoder.feed(piece))
    return values


# -- frame codec properties ------------------------------------------------------------


@given(st.lists(json_values, min_size=1, max_size=4), st.lists(st.integers(0, 10**6)))
def test_any_json_values_round_trip_through_frames_in_any_split(
    values: list[object], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(v) for v in values)
    decoder = FrameDecoder()
    assert feed_all(decoder, split(stream, cuts)) == values
    assert decoder.pending == 0


@given(json_values)
def test_encoded_frame_is_compact_utf8_json_behind_its_length(value: object) -> None:
    frame = encode_frame(value)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    text = frame[4:].decode("utf-8")
    assert json.loads(text) == value
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(st.binary(max_size=300), st.lists(st.integers(0, 10**6), max_size=8))
@settings(max_examples=300)
def test_arbitrary_bytes_yield_values_or_protocol_error(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder()
    try:
        values = feed_all(decoder, split(data, cuts))
    except ProtocolError:
        with pytest.raises(ProtocolError):
            decoder.feed(b"")
        return
    assert isinstance(values, list)


@given(st.binary(min_size=1, max_size=200))
@settings(max_examples=300)
def test_arbitrary_bodies_behind_a_correct_length_decode_or_raise_protocol_error(
    body: bytes,
) -> None:
    try:
        values = FrameDecoder().feed(raw_frame(body))
    except ProtocolError:
        return
    assert len(values) == 1
    # Whatever was accepted must survive being sent back out.
    assert FrameDecoder().feed(encode_frame(values[0])) == values


# -- strict decoding -------------------------------------------------------------------


def test_oversized_length_is_refused_from_the_header_alone() -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match="larger than the 16 MiB limit"):
        decoder.feed(header(MAX_FRAME + 1))
    with pytest.raises(ProtocolError, match="broken by an earlier error"):
        decoder.feed(raw_frame(b"1"))


def test_frame_of_exactly_max_size_is_accepted() -> None:
    body = b'"' + b"a" * (MAX_FRAME - 2) + b'"'
    assert frame_length(header(MAX_FRAME)) == MAX_FRAME
    assert FrameDecoder().feed(raw_frame(body)) == ["a" * (MAX_FRAME - 2)]


def test_partial_frames_wait_for_more_bytes() -> None:
    decoder = FrameDecoder()
    frame = raw_frame(b'{"a":1}')
    assert decoder.feed(frame[:2]) == []
    assert decoder.feed(frame[2:6]) == []
    assert decoder.pending == 2
    assert decoder.feed(frame[6:] + frame[:1]) == [{"a": 1}]
    assert decoder.pending == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        (b'"\xed\xa0\x80"', "not valid UTF-8"),  # an encoded surrogate is not UTF-8
        (b"{not json", "not valid JSON"),
        (b"1 2", "not valid JSON"),
        (b"\xef\xbb\xbf{}", "not valid JSON"),  # a byte-order mark is not JSON
        (b"NaN", "non-finite"),
        (b"[Infinity]", "non-finite"),
        (b'{"a":-Infinity}', "non-finite"),
        (b"1e400", "non-finite"),
        (b"[-1e999]", "non-finite"),
        (b'"\\ud800"', "unpaired surrogate"),
        (b'{"\\udfff":1}', "unpaired surrogate"),
        (b'{"a":1,"a":2}', "repeats a key"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
        (b"9" * 5000, "not valid JSON"),  # beyond the interpreter's integer-literal limit
    ],
)
def test_malformed_bodies_are_protocol_errors(body: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        FrameDecoder().feed(raw_frame(body) if body else header(0))
    if body:
        with pytest.raises(ProtocolError, match=message):
            decode_body(body)


def test_error_messages_never_echo_the_frame() -> None:
    for body in (b'{"token": "' + SECRET.encode() + b'"', SECRET.encode()):
        with pytest.raises(ProtocolError) as caught:
            FrameDecoder().feed(raw_frame(body))
        assert SECRET not in str(caught.value)
        assert "token" not in str(caught.value)


def test_valid_surrogate_pairs_and_escaped_backslashes_are_accepted() -> None:
    assert decode_body(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert decode_body(b'"\\\\ud800"') == "\\ud800"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "cannot be encoded"),
        ({"a": float("inf")}, "cannot be encoded"),
        (object(), "cannot be encoded"),
        ({1, 2}, "cannot be encoded"),
        ("\ud800", "cannot be encoded"),
        ({"key": b"bytes"}, "cannot be encoded"),
        ("x" * MAX_FRAME, "larger than the 16 MiB limit"),
    ],
)
def test_encode_frame_refuses_what_it_cannot_frame(value: object, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        encode_frame(value)


def test_encode_frame_refuses_circular_and_very_deep_values() -> None:
    circular: list[object] = []
    circular.append(circular)
    with pytest.raises(ProtocolError):
        encode_frame(circular)
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ProtocolError, match="nested too deeply"):
        encode_frame(deep)


# -- Wire v1 envelopes -----------------------------------------------------------------


def test_parse_request_accepts_integer_and_string_ids() -> None:
    assert parse_request({"v": 1, "id": 7, "request": {"op": "status"}}) == WireRequest(
        id=7, request={"op": "status"}
    )
    parsed = parse_request({"v": 1, "id": "x" * 128, "request": {"op": "get", "n": 1}})
    assert parsed.id == "x" * 128
    assert parsed.request == {"op": "get", "n": 1}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1], "not a JSON object"),
        ({"v": 1, "id": 1, "request": {"op": "a"}, SECRET: 1}, "unknown top-level field"),
        ({"v": 2, "id": 1, "request": {"op": "a"}}, "set v to 1"),
        ({"v": True, "id": 1, "request": {"op": "a"}}, "set v to 1"),
        ({"v": "1", "id": 1, "request": {"op": "a"}}, "set v to 1"),
        ({"id": 1, "request": {"op": "a"}}, "set v to 1"),
        ({"v": 1, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": True, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": 1.5, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": 2**53, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": "x" * 129, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": None, "request": {"op": "a"}}, "id is missing or invalid"),
        ({"v": 1, "id": 1}, "request field is missing"),
        ({"v": 1, "id": 1, "request": [SECRET]}, "request field is missing"),
        ({"v": 1, "id": 1, "request": {"what": SECRET}}, "has no op"),
        ({"v": 1, "id": 1, "request": {"op": ""}}, "has no op"),
        ({"v": 1, "id": 1, "request": {"op": 3}}, "has no op"),
    ],
)
def test_parse_request_rejects_bad_envelopes_without_echoing_them(
    value: object, message: str
) -> None:
    with pytest.raises(ProtocolError, match=message) as caught:
        parse_request(value)
    assert caught.value.code == "protocol"
    assert SECRET not in caught.value.message


def test_envelope_id_salvages_only_valid_ids() -> None:
    assert envelope_id({"v": 9, "id": "abc", "junk": 1}) == "abc"
    assert envelope_id({"id": 5}) == 5
    assert envelope_id({"id": True}) is None
    assert envelope_id({"id": "x" * 129}) is None
    assert envelope_id([{"id": 1}]) is None
    assert envelope_id(None) is None


def test_ok_envelope_round_trips_through_parse_response() -> None:
    envelope = ok_envelope(3, {"answer": [1, 2]})
    assert envelope == {"v": 1, "id": 3, "ok": True, "response": {"answer": [1, 2]}}
    assert parse_response(envelope, expected_id=3) == {"answer": [1, 2]}


@pytest.mark.parametrize(
    "error",
    [
        MemoriesError("failed; retry"),
        UsageError("bad flag; see --help"),
        ProtocolError("bad frame; resend"),
        NotFoundError("no card; list cards"),
        BusyError("busy; try again"),
        UnavailableError("no daemon; start it"),
        LockedError("locked; unlock it"),
        DeniedError("denied; ask for a grant"),
        IntegrityError("verification failed"),
    ],
)
def test_error_envelopes_rebuild_the_same_error_class(error: MemoriesError) -> None:
    envelope = error_envelope("req-1", error)
    assert envelope["ok"] is False
    assert envelope["error"] == {"code": error.code, "message": error.message}
    with pytest.raises(MemoriesError) as caught:
        parse_response(json.loads(json.dumps(envelope)), expected_id="req-1")
    assert type(caught.value) is type(error)
    assert caught.value.message == error.message


def test_error_with_null_id_answers_any_request_and_unknown_codes_stay_generic() -> None:
    envelope = {"v": 1, "id": None, "ok": False, "error": {"code": "weird", "message": "m"}}
    with pytest.raises(MemoriesError) as caught:
        parse_response(envelope, expected_id=9)
    assert type(caught.value) is MemoriesError


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"v": 1, "id": 1, "ok": True},
        {"v": 1, "id": 1, "ok": True, "response": [1]},
        {"v": 1, "id": 1, "ok": True, "response": {}, "extra": 1},
        {"v": 2, "id": 1, "ok": True, "response": {}},
        {"v": 1, "id": 2, "ok": True, "response": {}},
        {"v": 1, "id": "1", "ok": True, "response": {}},
        {"v": 1, "id": True, "ok": True, "response": {}},
        {"v": 1, "id": 1, "ok": "yes", "response": {}},
        {"v": 1, "id": 1, "ok": False},
        {"v": 1, "id": 1, "ok": False, "error": {"code": 1, "message": "m"}},
        {"v": 1, "id": 2, "ok": False, "error": {"code": "busy", "message": "m"}},
        {"v": 1, "id": 1, "ok": False, "error": {"code": "x", "message": "m"}, "response": {}},
    ],
)
def test_parse_response_rejects_malformed_or_misaddressed_envelopes(value: Any) -> None:
    with pytest.raises(ProtocolError, match="malformed response"):
        parse_response(value, expected_id=1)


def test_socket_addresses_longer_than_a_unix_socket_allows_are_usage_errors(
    tmp_path: Any,
) -> None:
    with pytest.raises(UsageError, match="too long for a Unix socket"):
        unix_socket_address(tmp_path / ("d" * 120) / "s.sock")
    assert unix_socket_address(tmp_path / "s.sock") == str(tmp_path / "s.sock")


# -- fuzz --------------------------------------------------------------------------------


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(6)
        position = rng.randrange(len(data) + 1)
        if choice == 0 and data:
            data[min(position, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[position:position] = rng.randbytes(rng.randint(1, 8))
        elif choice == 2:
            del data[position : position + rng.randint(1, 8)]
        elif choice == 3:
            data[position:position] = rng.choice([b"\\ud800", b"NaN", b"[[[[", b"\xc3", b'"'])
        elif choice == 4:
            data[:4] = struct.pack(">I", rng.choice([0, 1, len(data), MAX_FRAME, MAX_FRAME + 1]))
        else:
            data = data[:position]
    return bytes(data)


@pytest.mark.slow
def test_fuzzed_frame_streams_only_ever_raise_protocol_error() -> None:
    rng = random.Random(20240611)
    seeds = [
        {"v": 1, "id": 1, "request": {"op": "search", "query": "naïve café 検索", "k": 5}},
        {"v": 1, "id": "a", "ok": True, "response": {"hits": [{"score": 0.5, "t": None}]}},
        [1, -2.5e-7, True, False, None, "\u2028", {"nested": [[{"x": ""}]]}],
    ]
    frames = [encode_frame(seed) for seed in seeds]
    started = time.monotonic()
    outcomes = {"values": 0, "errors": 0, "requests": 0, "rejected": 0}
    for _ in range(5000):
        stream = b"".join(_mutate(rng, rng.choice(frames)) for _ in range(rng.randint(1, 3)))
        decoder = FrameDecoder()
        try:
            for piece in split(stream, [rng.randrange(len(stream) + 1) for _ in range(3)]):
                for value in decoder.feed(piece):
                    outcomes["values"] += 1
                    try:
                        parse_request(value)
                        outcomes["requests"] += 1
                    except ProtocolError:
                        outcomes["rejected"] += 1
        except ProtocolError:
            outcomes["errors"] += 1
    assert outcomes["values"] > 0
    assert outcomes["errors"] > 0
    assert outcomes["requests"] > 0
    assert outcomes["rejected"] > 0
    assert time.monotonic() - started < 10
