"""The transcript kit: one behaviour for fields, slash commands, clipping and tailing."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.urchin.collectors.support import journal_path
from urchin.collectors.base import RUN_ID_WINDOW, CheckpointStore, CollectorRun, stable_id
from urchin.collectors.tail import record_key
from urchin.collectors.transcript import (
    JsonlTail,
    PromptMatcher,
    RecentKeys,
    SlashCommand,
    Tally,
    as_dict,
    as_int,
    as_str,
    clip,
    dig,
    from_epoch_ms,
    parse_json_line,
    slash_command,
    tool_summary,
)
from urchin.ephemeral import Ephemeral
from urchin.event import Event
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Recorder


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (-2, -2),
        (3.9, 3),
        (True, None),
        (float("nan"), None),
        (float("inf"), None),
        ("3", None),
        (None, None),
    ],
)
def test_integer_fields_mean_the_same_in_every_collector(value: object, expected: int) -> None:
    assert as_int(value) == expected


def test_text_and_object_fields() -> None:
    assert as_str("  x ") == "  x "
    assert as_str("   ") is None and as_str(3) is None
    same = {"a": 1}
    assert as_dict(same) is same and as_dict([1]) == {}
    assert dig({"a": {"b": 2}}, "a", "b") == 2 and dig({"a": 1}, "a", "b") is None
    assert from_epoch_ms(1_777_629_600_000) is not None
    assert from_epoch_ms(0) is None and from_epoch_ms(float("nan")) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/clear", SlashCommand("/clear", "")),
        ("  /fix-issue the login\nand more ", SlashCommand("/fix-issue", "the login\nand more")),
        ("/mcp:server.tool x", SlashCommand("/mcp:server.tool", "x")),
        ("/usr/bin/env is broken", None),
        ("fix /clear", None),
        ("/", None),
        ("", None),
    ],
)  # fmt: skip
def test_one_slash_command_grammar(text: str, expected: SlashCommand | None) -> None:
    assert slash_command(text) == expected


def test_slash_command_prefixes_are_chosen_by_the_collector() -> None:
    assert slash_command("?help") is None
    assert slash_command("?help", "/?") == SlashCommand("?help", "")


def test_clip_and_tool_summary() -> None:
    assert clip("  short  ") == "short"
    cut = clip("x" * 5000)
    assert len(cut) == 4096 and cut.endswith("…")
    assert tool_summary("Grep", {"pattern": "TODO", "path": "src"}, ("path", "pattern")) == (
        "path: src; pattern: TODO"
    )
    assert tool_summary("Run", {"n": 1}, ("path",)) == '{"n":1}'
    assert tool_summary("Run", None, ("path",)) == "Run"


def test_recent_keys_stay_bounded_in_memory_during_a_run() -> None:
    keys = RecentKeys([], limit=100)
    for n in range(5_000):
        keys.add(f"k{n}")
    assert len(keys._keys) <= 200
    assert "k4999" in keys and "k0" not in keys
    assert len(keys.to_json()) == 100


def test_prompt_matcher_consumes_a_twin_once_and_stays_bounded() -> None:
    prompts = PromptMatcher([])
    assert not prompts.seen_elsewhere("h", "fix it", 1_000)
    assert prompts.seen_elsewhere("t", "fix  it", 2_000)
    assert not prompts.seen_elsewhere("t", "fix it", 3_000)
    for n in range(30_000):
        prompts.seen_elsewhere("h", f"p{n}", 10_000 + n)
    assert prompts._count <= 10_000


# -- tailing -----------------------------------------------------------------------------


@pytest.fixture
def run(tmp_path: Path) -> CollectorRun:
    recorder = Recorder(Journal(journal_path(tmp_path)), Ephemeral(tmp_path))
    return CollectorRun("toy", recorder, Identity.resolve(), CheckpointStore(tmp_path))


def test_jsonl_tail_counts_malformed_lines_and_resumes_after_the_last_newline(
    tmp_path: Path, run: CollectorRun
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\nnot json\n\n{"a":2}\n{"a":')
    tally = Tally()
    tail = JsonlTail(path, None, tally)

    values = [value for _, value in tail.records()]
    tail.saw(5)
    entry = tail.entry(run, session="s1", cwd=None)

    assert values == [{"a": 1}, {"a": 2}]
    assert tally.malformed == 1
    assert isinstance(entry, dict)
    assert entry["offset"] == len(b'{"a":1}\nnot json\n\n{"a":2}\n')
    assert entry["session"] == "s1" and "cwd" not in entry and entry["last_ms"] == 5
    # The torn last line is read again once its writer finishes it.
    assert not JsonlTail(path, entry, tally).unchanged()
    with path.open("ab") as handle:
        handle.write(b"3}\n")
    later = JsonlTail(path, entry, tally)
    assert [value for _, value in later.records()] == [{"a": 3}]
    assert JsonlTail(path, later.entry(run), tally).unchanged()


def test_jsonl_tail_skips_lines_the_caller_rejects_without_decoding(
    tmp_path: Path, run: CollectorRun
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"big":"x"}\n{"keep":1}\n')
    tail = JsonlTail(path, None, Tally())

    values = [value for _, value in tail.records(lambda line: b"big" in line)]
    tail.entry(run)

    assert values == [{"keep": 1}]
    assert run.result.skipped == 1


def test_jsonl_tail_keeps_the_newest_time_whether_given_in_ms_or_as_a_time(
    tmp_path: Path, run: CollectorRun
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n')
    tail = JsonlTail(path, {"last_ms": 1_000}, Tally())
    list(tail.records())
    tail.saw_time(datetime(1970, 1, 1, 0, 0, 3, 250000, tzinfo=UTC))
    tail.saw_time(datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC))
    tail.saw(2_500)
    assert tail.last_ms == 3_250
    tail.saw(4_000)
    tail.saw_time(datetime(1970, 1, 1, 0, 0, 3, tzinfo=UTC))
    entry = tail.entry(run)
    assert isinstance(entry, dict) and entry["last_ms"] == 4_000


def test_jsonl_tail_of_a_gone_file_forgets_it_and_an_unreadable_one_keeps_its_place(
    tmp_path: Path, run: CollectorRun
) -> None:
    gone = JsonlTail(tmp_path / "missing.jsonl", {"offset": 3}, Tally())
    assert list(gone.records()) == []
    assert gone.entry(run) is None

    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()
    saved = {"offset": 7}
    broken = JsonlTail(folder, saved, Tally())
    assert list(broken.records()) == []
    assert broken.entry(run) is saved
    assert run.result.errors and str(folder) in run.result.errors[0]


# -- the run -----------------------------------------------------------------------------


def test_run_batches_added_events_and_writes_them_before_its_checkpoint(
    tmp_path: Path, run: CollectorRun
) -> None:
    for n in range(3):
        run.add(Event.create(f"e{n}", "toy", event_id=stable_id("toy", str(n))))
    assert not journal_path(tmp_path).exists()

    run.save({"done": 3})

    assert len(journal_path(tmp_path).read_bytes().splitlines()) == 3
    assert run.result.new == 3


def test_run_remembers_a_bounded_window_of_the_ids_it_emitted(run: CollectorRun) -> None:
    ids = [stable_id("toy", str(n)) for n in range(RUN_ID_WINDOW + 50)]
    run.emit(Event.create("e", "toy", event_id=event_id) for event_id in ids)
    run.emit([Event.create("again", "toy", event_id=ids[-1])])

    assert run.result.new == RUN_ID_WINDOW + 50
    assert run.result.skipped == 1
    assert len(run._emitted) == RUN_ID_WINDOW


def test_run_looks_for_repeats_only_among_its_own_sources(tmp_path: Path) -> None:
    journal = Journal(journal_path(tmp_path))
    mine = Event.create("mine", "toy", event_id=stable_id("toy", "1"))
    other = Event.create("other", "git", event_id=stable_id("git", "1"))
    journal.append_many([mine, other])
    run = CollectorRun(
        "toy",
        Recorder(journal, Ephemeral(tmp_path)),
        Identity.resolve(),
        CheckpointStore(tmp_path),
    )

    assert run._ids_since_checkpoint() == {mine.id.int}
    run.emit([mine])
    assert run.result.skipped == 1 and run.result.new == 0


def test_run_reads_journal_lines_not_in_the_compact_layout(tmp_path: Path) -> None:
    event = Event.create("spaced", "toy", event_id=stable_id("toy", "s"))
    spaced = json.dumps(event.to_json(), indent=None) + "\n"  # ", " and ": " separators
    path = journal_path(tmp_path)
    os.makedirs(path.parent, exist_ok=True)
    path.write_text(spaced, encoding="utf-8")
    run = CollectorRun(
        "toy",
        Recorder(Journal(path), Ephemeral(tmp_path)),
        Identity.resolve(),
        CheckpointStore(tmp_path),
    )

    assert run._ids_since_checkpoint() == {event.id.int}


def test_run_recognises_an_id_written_in_upper_case(tmp_path: Path) -> None:
    event = Event.create("shouted", "toy", event_id=stable_id("toy", "u"))
    line = event.to_line().replace(str(event.id).encode(), str(event.id).upper().encode())
    path = journal_path(tmp_path)
    os.makedirs(path.parent, exist_ok=True)
    path.write_bytes(line)
    run = CollectorRun(
        "toy",
        Recorder(Journal(path), Ephemeral(tmp_path)),
        Identity.resolve(),
        CheckpointStore(tmp_path),
    )

    run.emit([event])

    assert run.result.skipped == 1 and run.result.new == 0


def test_a_line_whose_id_is_not_a_uuid_is_not_taken_for_one(tmp_path: Path) -> None:
    event = Event.create("odd", "toy", event_id=stable_id("toy", "o"))
    text = str(event.id)
    broken = event.to_line().replace(text.encode(), b"_" + text[1:].encode())
    path = journal_path(tmp_path)
    os.makedirs(path.parent, exist_ok=True)
    path.write_bytes(broken)
    run = CollectorRun(
        "toy",
        Recorder(Journal(path), Ephemeral(tmp_path)),
        Identity.resolve(),
        CheckpointStore(tmp_path),
    )

    assert run._ids_since_checkpoint() == set()


def test_first_time_stores_the_same_key_hash_as_record_key() -> None:
    keys = RecentKeys(None)
    assert keys.first_time("msg_1/text/é")
    assert not keys.first_time("msg_1/text/é")
    assert "msg_1/text/é" in keys
    assert keys.to_json() == [record_key(None, "msg_1/text/é")]


class _HashedKeys:
    """RecentKeys as the checkpoint defines it: every key hashed, oldest trimmed first."""

    def __init__(self, saved: list[str], limit: int) -> None:
        self.limit = limit
        self.keys = dict.fromkeys(saved)

    def _trim(self) -> None:
        if len(self.keys) > 2 * self.limit:
            self.keys = dict.fromkeys(list(self.keys)[-self.limit :])

    def first_time(self, key: str) -> bool:
        hashed = record_key(None, key)
        if hashed in self.keys:
            return False
        self.keys[hashed] = None
        self._trim()
        return True

    def add(self, key: str) -> None:
        hashed = record_key(None, key)
        self.keys.pop(hashed, None)
        self.keys[hashed] = None
        self._trim()

    def to_json(self) -> list[str]:
        return list(self.keys)[-self.limit :]


_key_names = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "x" * 300, "y" * 300])
_key_ops = st.lists(
    st.tuples(st.sampled_from(["first", "add", "in", "save"]), _key_names), max_size=80
)


@given(st.lists(_key_names, max_size=6), _key_ops)
def test_recent_keys_behave_and_save_as_if_every_key_were_hashed(
    earlier: list[str], ops: list[tuple[str, str]]
) -> None:
    saved = [record_key(None, key) for key in dict.fromkeys(earlier)]
    keys, model = RecentKeys(saved, limit=3), _HashedKeys(saved, limit=3)
    for op, key in ops:
        if op == "first":
            assert keys.first_time(key) == model.first_time(key)
        elif op == "add":
            keys.add(key)
            model.add(key)
        elif op == "in":
            assert (key in keys) == (record_key(None, key) in model.keys)
        else:
            # A later run starts from what this one saved.
            keys = RecentKeys(keys.to_json(), limit=3)
            model = _HashedKeys(model.to_json(), limit=3)
        assert keys.to_json() == model.to_json()


def test_keys_of_an_earlier_run_left_after_a_trim_are_still_recognised() -> None:
    saved = [record_key(None, key) for key in "abcdef"]
    keys = RecentKeys(saved, limit=3)
    assert keys.first_time("g")  # seven keys: trimmed to the newest three
    assert keys.to_json() == [record_key(None, "e"), record_key(None, "f"), record_key(None, "g")]
    assert not keys.first_time("e") and not keys.first_time("f")
    assert keys.first_time("a")


def test_keys_of_an_earlier_run_are_recognised_until_they_age_out() -> None:
    first = RecentKeys(None, limit=2)
    assert first.first_time("msg_1")
    second = RecentKeys(first.to_json(), limit=2)
    assert "msg_1" in second and not second.first_time("msg_1")
    for n in range(5):
        assert second.first_time(f"new_{n}")
    assert second.first_time("msg_1")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_json_lines = st.one_of(
    st.tuples(
        st.sampled_from(["", " ", "\t"]),
        _json_values.map(json.dumps),
        st.sampled_from(["", " ", "\r", " \t ", "x", "}", " 1", "\u00a0", "\x0b"]),
    ).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass")),
    st.binary(max_size=20).map(lambda raw: b"{" + raw),
    st.binary(max_size=20),
)


def _decodes_as_json_loads(line: bytes) -> None:
    try:
        expected: object = json.loads(line)
    except ValueError:
        with pytest.raises(ValueError, match=r"\S"):  # any of json's own messages
            parse_json_line(line)
        return
    assert parse_json_line(line) == expected


@given(_json_lines)
def test_json_lines_decode_exactly_as_json_loads_reads_them(line: bytes) -> None:
    _decodes_as_json_loads(line)


@pytest.mark.parametrize(
    "line",
    [b'{"a":1} ', b'{"a":1}\r', b'["\\ud800"]', b'{"a":"\xc3\xa9"}', b"[1] [2]", b"[", b"{}x"],
)
def test_json_lines_at_the_edges_decode_exactly_as_json_loads_reads_them(line: bytes) -> None:
    _decodes_as_json_loads(line)


def test_deeply_nested_json_line_is_malformed_not_a_crash() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json_line(b"[" * 100_000 + b"]" * 100_000)


def test_prompt_matcher_saves_the_hash_of_the_normalised_text_and_finds_it_again() -> None:
    earlier = PromptMatcher([])
    assert not earlier.seen_elsewhere("h", " fix\n the  bug ", 1_000)
    saved = earlier.to_json()
    assert saved == [["h", record_key(None, "fix the bug"), 1_000]]
    later = PromptMatcher(saved)
    assert later.seen_elsewhere("t", "fix the bug", 2_000)
