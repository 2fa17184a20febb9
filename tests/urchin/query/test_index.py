"""The SQLite index: incremental and concurrent refresh, rebuild triggers, and answers
identical to the linear journal scan."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import CliResult, wait_for
from urchin import query
from urchin.errors import UsageError
from urchin.event import Event
from urchin.journal import Journal
from urchin.query import index
from urchin.query.plans import Search

Urchin = Callable[..., CliResult]

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_pool() -> Iterator[None]:
    # Connections kept between queries belong to one test's files only.
    index.close_pooled()
    yield
    index.close_pooled()


# Search plans by few-matches limit: the default, which on small journals reads every
# match in one pass; walking newest first then counting in SQL; reading everything.
PLANS = [2_000, 0, 1_000_000]


@pytest.fixture(params=PLANS, ids=["default", "walk", "few"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Search, "FEW", request.param)


def _event(content: str, **fields: object) -> Event:
    base: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "timestamp": "2026-05-01T10:00:00Z",
        "source": "cli",
        "kind": "agent",
        "content": content,
    }
    base.update(fields)
    return Event.from_json({k: v for k, v in base.items() if v is not None})


def _write(path: Path, *chunks: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        for chunk in chunks:
            handle.write(chunk)


def _numbered(count: int, start: int = 0, source: str = "cli") -> bytes:
    base = datetime(2026, 4, 1, tzinfo=UTC)
    return b"".join(
        Event.create(
            f"event number {n} Alpha-{n % 7}",
            source,
            timestamp=base + timedelta(minutes=n % 500),
            workspace=f"/home/u/proj-{n % 3}",
            tags=(f"t{n % 4}",),
        ).to_line()
        for n in range(start, start + count)
    )


@contextlib.contextmanager
def _db(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection to an index file, closed afterwards (autocommit)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def _rows(db: Path) -> list[tuple[object, ...]]:
    with _db(db) as conn:
        return conn.execute(
            "SELECT e.seq, e.byte_offset, e.length, e.ts, e.lag, s.name, w.name, t.body"
            " FROM events e JOIN sources s ON s.id = e.source"
            " LEFT JOIN workspaces w ON w.id = e.workspace JOIN texts t ON t.seq = e.seq"
            " ORDER BY e.seq"
        ).fetchall()


def _state(db: Path) -> tuple[int, int, int, int]:
    with _db(db) as conn:
        row = conn.execute("SELECT byte_offset, events, malformed, oversized FROM state").fetchone()
        total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    assert row[1] == total
    return row  # type: ignore[no-any-return]


def _ids(journal: Journal) -> list[uuid.UUID]:
    return sorted(entry.event.id for entry in journal.scan())


def _line_ids(journal: Path, where: list[tuple[int, int]]) -> list[uuid.UUID]:
    """The ids of the events on the journal lines at (offset, length)."""
    with open(journal, "rb") as handle:
        ids = []
        for offset, length in where:
            handle.seek(offset)
            ids.append(Event.from_line(handle.read(length)).id)
    return sorted(ids)


def _indexed_ids(db: Path) -> list[uuid.UUID]:
    with _db(db) as conn:
        where = conn.execute("SELECT byte_offset, length FROM events").fetchall()
    return _line_ids(db.with_name("events.jsonl"), where)


def _search(journal: Journal, *args: object) -> query.QueryResult:
    """Search the index itself: unlike query.search, never falls back to the scan."""
    return index.answer(journal, lambda ix: ix.search(*args, now=NOW))  # type: ignore[arg-type]


def _recent(journal: Journal, *args: object) -> query.QueryResult:
    return index.answer(journal, lambda ix: ix.recent(*args, now=NOW))  # type: ignore[arg-type]


def _workspace(journal: Journal, *args: object) -> query.QueryResult:
    return index.answer(
        journal,
        lambda ix: ix.workspace_events(*args, now=NOW),  # type: ignore[arg-type]
    )


def _same(a: query.QueryResult, b: query.QueryResult, *, malformed: bool = True) -> None:
    assert a.events == b.events
    assert a.matched == b.matched
    assert a.torn_tail == b.torn_tail
    if malformed:
        assert a.malformed == b.malformed


# -- incremental refresh ------------------------------------------------------------------


def test_incremental_refresh_equals_a_full_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "a" / "events.jsonl"
    journal = Journal(path)
    small = index.JournalIndex(journal, chunk_bytes=700)  # many chunks per refresh
    batches = [
        _numbered(40),
        b"not json at all\n\n" + _numbered(5, 40),
        b'{"id":"x"}\n' + _numbered(30, 45) + b'{"torn": ',
        b'"rest of a broken line"}\n' + _numbered(10, 75),
        _numbered(1, 85),
    ]
    for batch in batches:
        _write(path, batch)
        status = small.refresh()
        assert status.indexed_bytes <= path.stat().st_size
    small.close()
    copy = tmp_path / "b" / "events.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    with index.JournalIndex(Journal(copy)) as whole:
        rebuilt = whole.rebuild()
    assert _rows(path.parent / "index.db") == _rows(copy.parent / "index.db")
    assert _state(path.parent / "index.db") == _state(copy.parent / "index.db")
    scan = journal.scan()
    assert rebuilt.events == len(list(scan)) == 86
    assert rebuilt.malformed == scan.stats.malformed == 3
    for needle in ["alpha-3", "EVENT NUMBER 8", "t2", "proj-1", "zz", "broken"]:
        _same(_search(journal, needle, 7), _search(Journal(copy), needle, 7))


def test_refresh_without_new_lines_takes_no_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "BUSY_TIMEOUT", 0.05)
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(20))
    journal = Journal(path)
    with index.JournalIndex(journal) as first:
        assert first.refresh().events == 20
    holder = sqlite3.connect(tmp_path / "index.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process mid-write
    try:
        with index.JournalIndex(journal, busy_timeout=0.05) as reader:
            assert reader.count() == 20
            assert reader.search("number 7", 5).matched == 1
            _write(path, _numbered(1, 20))
            with pytest.raises(index.IndexUnavailableError):
                reader.count()  # has to catch up, and cannot
        # The public functions answer from the journal instead of failing.
        assert query.count(journal) == 21
        _same(
            query.search(journal, "number 20", now=NOW),
            query.linear_search(journal, "number 20", now=NOW),
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- concurrency --------------------------------------------------------------------------

_WRITER = """
import contextlib, pathlib, sqlite3, sys
from urchin.event import Event
from urchin.journal import Journal
journal = Journal(sys.argv[1])
db = pathlib.Path(sys.argv[1]).with_name("index.db")

def indexed():
    try:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute("SELECT byte_offset FROM state").fetchone()[0]
    except (sqlite3.Error, TypeError):
        return 0

n = 0

def write():
    global n
    # Some lines far beyond a pipe buffer, so readers see half-written tails.
    body = f"writer event {n} " + ("x" * 70_000 if n % 200 == 0 else "")
    journal.append_many([Event.create(body, "writer"), Event.create(f"pair {n}", "writer")])
    n += 1

for _ in range(25):
    # Keep writing until a refresher has indexed past this mark: refreshes and
    # appends overlap, and the journal stays small.
    write()
    mark = journal.size()
    while indexed() < mark and n < 20_000:
        write()
journal.close()
print(n)
"""

_REFRESHER = """
import pathlib, sys
from urchin.query import index
from urchin.journal import Journal
journal = Journal(sys.argv[1])
stop = pathlib.Path(sys.argv[2])
rounds = 0
while True:
    done = stop.exists()
    with index.JournalIndex(journal, chunk_bytes=int(sys.argv[3])) as ix:
        ix.refresh()
    rounds += 1
    if done:
        break
print(rounds)
"""


def _python(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _finish(proc: subprocess.Popen[bytes]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode("utf-8", "replace")
    return out.decode("utf-8")


def _consistent_snapshot(db: Path, journal: Journal) -> int:
    """The index holds exactly the journal's events up to its stored offset."""
    with _db(db) as conn:
        conn.execute("BEGIN")
        offset, events = conn.execute("SELECT byte_offset, events FROM state").fetchone()
        where = conn.execute("SELECT byte_offset, length FROM events").fetchall()
        conn.execute("COMMIT")
    ids = _line_ids(journal.path, where)
    expected = sorted(e.event.id for e in journal.scan() if e.offset + e.length <= offset)
    assert ids == expected
    assert events == len(ids)
    return len(ids)


def test_concurrent_writer_and_two_refreshers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(10))
    journal = Journal(path)
    stop = tmp_path / "stop"
    other = _python(_REFRESHER, str(path), str(stop), "20000")
    writer = _python(_WRITER, str(path))
    seen: list[int] = []

    def writer_done() -> bool:
        with index.JournalIndex(journal, chunk_bytes=30_000) as mine:
            mine.refresh()
        seen.append(_consistent_snapshot(tmp_path / "index.db", journal))
        return writer.poll() is not None

    try:
        wait_for(writer_done, timeout=90)
    finally:
        stop.touch()
    batches = int(_finish(writer))
    assert 0 < batches < 20_000
    assert int(_finish(other)) >= 1
    with index.JournalIndex(journal) as mine:
        status = mine.refresh()
    total = 10 + 2 * batches
    assert (status.events, status.malformed, status.torn_tail) == (total, 0, False)
    assert _consistent_snapshot(tmp_path / "index.db", journal) == total
    assert _indexed_ids(tmp_path / "index.db") == _ids(journal)
    assert seen == sorted(seen)  # never went backwards
    for needle in ["pair 9", "writer event 1", "xxxxx"]:
        _same(
            _search(journal, needle, 10),
            query.linear_search(journal, needle, 10, now=NOW),
        )


def test_two_processes_catching_up_at_once_index_every_line_once(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    body = b"".join(_numbered(500, n) + b"garbage\n" for n in range(0, 6000, 500))
    _write(path, body)
    stop = tmp_path / "stop"
    stop.touch()  # one refresh each
    procs = [_python(_REFRESHER, str(path), str(stop), "8000") for _ in range(2)]
    for proc in procs:
        _finish(proc)
    db = tmp_path / "index.db"
    offset, events, malformed, oversized = _state(db)
    assert (offset, events, malformed, oversized) == (path.stat().st_size, 6000, 12, 0)
    assert _indexed_ids(db) == _ids(Journal(path))
    with _db(db) as conn:
        fts = conn.execute("SELECT count(*) FROM events_text WHERE events_text MATCH ?", ['"num"'])
        assert fts.fetchone()[0] == 6000


# -- rebuild triggers ---------------------------------------------------------------------


def test_replaced_journal_is_indexed_again(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(30))
    journal = Journal(path)
    assert query.count(journal) == 30
    inode = path.stat().st_ino
    other = tmp_path / "new.jsonl"
    _write(other, _numbered(45, 100, source="other"))  # bigger, different lines
    os.replace(other, path)
    assert path.stat().st_ino != inode
    assert query.count(journal) == 45
    assert _indexed_ids(tmp_path / "index.db") == _ids(journal)
    assert _search(journal, "number 5 ").matched == 0


@pytest.mark.parametrize("keep_head", [True, False])
def test_truncated_journal_is_indexed_again(tmp_path: Path, keep_head: bool) -> None:
    path = tmp_path / "events.jsonl"
    lines = _numbered(60).splitlines(keepends=True)
    _write(path, *lines)
    journal = Journal(path)
    assert query.count(journal) == 60
    with open(path, "r+b") as handle:  # same inode, now shorter
        if keep_head:  # the first 4 KiB stay as they were: only the size tells
            handle.truncate(len(b"".join(lines[:40])))
            assert path.stat().st_size > 4096
        else:
            handle.truncate(0)
            handle.write(_numbered(3, 500))
    assert query.count(journal) == (40 if keep_head else 3)
    assert _indexed_ids(tmp_path / "index.db") == _ids(journal)


def test_rewritten_journal_of_the_same_inode_and_larger_size_is_indexed_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(30))
    journal = Journal(path)
    assert query.count(journal) == 30
    size = path.stat().st_size
    replacement = _numbered(40, 900)
    assert len(replacement) > size
    with open(path, "r+b") as handle:
        handle.write(replacement)
    assert query.count(journal) == 40
    assert _indexed_ids(tmp_path / "index.db") == _ids(journal)


def test_deleted_journal_reads_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(5))
    journal = Journal(path)
    assert query.count(journal) == 5
    path.unlink()
    assert query.count(journal) == 0
    assert query.recent(journal).events == []
    assert query.last_event(journal) is None


def test_torn_tail_is_not_indexed_until_completed(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    whole = Event.create("the completed line", "cli").to_line()
    _write(path, _numbered(2), whole[:25])
    journal = Journal(path)
    first = _search(journal, "completed")
    assert (first.matched, first.torn_tail) == (0, True)
    assert _recent(journal).torn_tail is True
    assert _state(tmp_path / "index.db")[:2] == (path.stat().st_size - 25, 2)
    _write(path, whole[25:])
    done = _search(journal, "completed")
    assert (done.matched, done.torn_tail) == (1, False)
    assert query.count(journal) == 3


# -- a damaged or unusable index ----------------------------------------------------------


def _garbage_header(db: Path) -> None:
    db.write_bytes(b"this is not a database file at all" * 200)


def _garbage_pages(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[4096:] = bytes((n * 37) % 251 for n in range(len(data) - 4096))
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage_header, _garbage_pages])
def test_damaged_index_is_deleted_and_rebuilt(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(300))
    journal = Journal(path)
    assert query.count(journal) == 300
    index.close_pooled()
    db = tmp_path / "index.db"
    for leftover in ("index.db-wal", "index.db-shm"):
        assert not (tmp_path / leftover).exists()
    damage(db)
    _same(
        _search(journal, "alpha-2", 5),
        query.linear_search(journal, "alpha-2", 5, now=NOW),
    )
    assert _state(db)[1] == 300  # a whole, valid index again


def test_index_deleted_under_a_kept_connection_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(50))
    journal = Journal(path)
    assert query.count(journal) == 50
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    _write(path, _numbered(5, 50))
    assert query.count(journal) == 55
    assert _state(tmp_path / "index.db")[1] == 55


def test_unusable_index_location_falls_back_to_the_linear_scan(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(40), b"junk\n")
    (tmp_path / "index.db").mkdir()  # nothing can open this as a database
    journal = Journal(path)
    with pytest.raises(index.IndexUnavailableError):
        index.refresh(journal)
    _same(query.recent(journal, 5, now=NOW), query.linear_recent(journal, 5, now=NOW))
    _same(
        query.search(journal, "number 3", 5, now=NOW),
        query.linear_search(journal, "number 3", 5, now=NOW),
        malformed=False,
    )
    assert query.count(journal) == 40
    assert query.workspace_events(journal, "/home/u/proj-1", 3).matched == 13


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders anyway")
def test_read_only_journal_folder_answers_linearly(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    path = folder / "events.jsonl"
    _write(path, _numbered(12))
    folder.chmod(0o555)
    try:
        journal = Journal(path)
        _same(query.recent(journal, 3, now=NOW), query.linear_recent(journal, 3, now=NOW))
        assert not (folder / "index.db").exists()
    finally:
        folder.chmod(0o755)


def test_index_of_another_schema_version_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(8))
    journal = Journal(path)
    assert query.count(journal) == 8
    index.close_pooled()
    with _db(tmp_path / "index.db") as conn:
        conn.execute("DROP TABLE events_text")
        conn.execute("CREATE TABLE events_text (whatever)")  # as an older layout might be
        conn.execute("PRAGMA user_version = 1")
    assert _search(journal, "number 3").matched == 1
    with _db(tmp_path / "index.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == index.SCHEMA_VERSION
    assert _state(tmp_path / "index.db")[1] == 8


def test_index_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(3))
    assert query.count(Journal(path)) == 3
    assert (tmp_path / "index.db").stat().st_mode & 0o777 == 0o600


# -- answers equal the linear scan --------------------------------------------------------

ALPHABET = [*"aAbBkKzZ İıiIΣσςßẞéÉ日本/-_.\u212a\u0307\ufffd\x00", "\ud800"]


def _tricky_events() -> list[Event]:
    return [
        _event("Kelvin \u212a sign", tags=["Ab", "cd"], workspace="/w/Proj"),
        _event("turkish \u0130stanbul", title="İ title", timestamp="2026-05-01T11:00:00Z"),
        _event("ΟΔΟΣ final sigma", workspace="/w/proj/sub", timestamp="2026-05-01T11:00:00Z"),
        _event("nul \x00 inside and a \ud800 surrogate", source="s\ud800", tags=["x\x00y"]),
        _event("replacement \ufffd char", workspace="/w/日本", timestamp="2026-05-01T09:00:00Z"),
        _event("plain text", tags=["abc", "d"], title="Tagged", workspace=None),
        _event("ab", tags=["ab", "cd"], source="other", timestamp="2026-04-30T11:00:00Z"),
    ]


TRICKY_NEEDLES = [
    *("k", "K", "\u212a", "i\u0307", "İ", "ς", "σ", "ος", "\x00", "\ufffd", "b\ufffdc"),
    *("x\ufffdy", "/W/PROJ", "日本", "abc", "c\ufffdd", "ab", "a", "Tagged", "PLAIN T"),
    *("zzz", "i", " ", "\ud800"),
]


@pytest.mark.parametrize("needle", TRICKY_NEEDLES)
@pytest.mark.usefixtures("plan")
def test_tricky_needles_match_the_linear_scan(tmp_path: Path, needle: str) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, b"".join(e.to_line() for e in _tricky_events()), b"bad line\n")
    journal = Journal(path)
    for source in (None, "cli", "s\ud800"):
        for hours in (None, 2.0):
            for limit in (0, 1, 3):
                _same(
                    _search(journal, needle, limit, source, hours),
                    query.linear_search(journal, needle, limit, source, hours, now=NOW),
                    malformed=False,
                )


@pytest.mark.usefixtures("plan")
def test_a_match_straddling_two_tags_is_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    straddles = _event("nothing here", tags=["ab", "cd"], timestamp="2026-05-01T09:00:00Z")
    matches = _event("real b\ufffdc inside", timestamp="2026-05-01T10:00:00Z")
    _write(path, straddles.to_line(), matches.to_line())
    journal = Journal(path)
    for needle in ("b\ufffdc", "B\ufffdC"):
        for limit in (0, 1, 5):
            found = _search(journal, needle, limit)
            assert found.matched == 1
            assert found.events == [matches][:limit]
    assert _search(journal, "b\ufffdcd").matched == 0


@pytest.mark.parametrize("sort_from", [2_000, 0], ids=["sorted", "walked"])
def test_recent_workspace_count_and_last_event_match_the_linear_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sort_from: int
) -> None:
    # Above this many matches a workspace prefix is walked by time instead of sorted.
    monkeypatch.setattr(Search, "FEW", sort_from)
    path = tmp_path / "events.jsonl"
    _write(path, b"".join(e.to_line() for e in _tricky_events()), b"{}\n", _numbered(700))
    journal = Journal(path)
    for limit in (0, 1, 5, 600):  # large limits fetch in several statements
        for source in (None, "cli", "other", "nobody"):
            for hours in (None, 1.5, 24.0 * 40, -1.0, float("inf")):
                _same(
                    _recent(journal, limit, source, hours),
                    query.linear_recent(journal, limit, source, hours, now=NOW),
                )
        for prefix in ("", "/w", "/w/proj", "/w/Proj", "/home/u/proj-2", "/w/日", "/x"):
            _same(
                _workspace(journal, prefix, limit),
                query.linear_workspace_events(journal, prefix, limit, now=NOW),
            )
    assert index.answer(journal, lambda ix: ix.count()) == query.linear_count(journal) == 707
    assert query.count(journal) == 707
    assert index.answer(journal, lambda ix: ix.last_event()) == query.linear_last_event(journal)
    # Two events share the newest timestamp: the later line wins, as in the scan.
    assert query.last_event(journal).content == "ΟΔΟΣ final sigma"  # type: ignore[union-attr]


def test_nan_hours_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, _numbered(3))
    with pytest.raises(UsageError):
        query.recent(Journal(path), hours=float("nan"))
    with pytest.raises(UsageError):
        query.linear_search(Journal(path), "x", hours=float("nan"))


_text = st.text(st.sampled_from(ALPHABET), max_size=12)
_events = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.text(st.sampled_from(ALPHABET), min_size=1, max_size=30)
            | st.text(min_size=1, max_size=30),
            "title": st.none() | _text,
            "workspace": st.none() | st.sampled_from(["/w", "/w/Proj", "/W/proj/ΣΑ", "/x/日本"]),
            "tags": st.lists(_text.filter(bool), max_size=3),
            "source": st.sampled_from(["cli", "git", "Git"]),
            "minute": st.integers(0, 6),
            "micros": st.sampled_from([0, 1, 500_000, 999_999]),
        }
    ),
    min_size=1,
    max_size=25,
)


def _needle(data: st.DataObject, events: list[dict[str, object]]) -> str:
    fields = [str(v) for e in events for k, v in e.items() if k not in ("minute", "micros") and v]
    pick = data.draw(st.sampled_from(["slice", "random", "short"]))
    if pick == "slice" and fields:
        field = data.draw(st.sampled_from(fields))
        start = data.draw(st.integers(0, max(0, len(field) - 1)))
        end = data.draw(st.integers(start, len(field)))
        piece = field[start:end]
        return data.draw(st.sampled_from([piece, piece.upper(), piece.swapcase(), piece.lower()]))
    if pick == "short":
        return data.draw(st.text(st.sampled_from(ALPHABET), min_size=1, max_size=2))
    return data.draw(st.text(min_size=1, max_size=6))


@pytest.mark.parametrize("few", PLANS, ids=["default", "walk", "few"])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(events=_events, data=st.data())
def test_generated_events_answer_like_the_linear_scan(
    few: int,
    monkeypatch: pytest.MonkeyPatch,
    events: list[dict[str, object]],
    data: st.DataObject,
) -> None:
    monkeypatch.setattr(Search, "FEW", few)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        lines = [
            _event(
                str(e["content"]),
                title=e["title"],
                workspace=e["workspace"],
                tags=e["tags"] or None,
                source=e["source"],
                timestamp=f"2026-05-01T1{e['minute']}:00:00.{e['micros']:06d}Z",
            ).to_line()
            for e in events
        ]
        _write(path, *lines)
        journal = Journal(path)
        source = data.draw(st.sampled_from([None, "cli", "Git"]))
        hours = data.draw(st.sampled_from([None, 1.0, 3.0]))
        limit = data.draw(st.sampled_from([0, 1, 3, 50]))
        for _ in range(3):
            needle = _needle(data, events)
            _same(
                _search(journal, needle, limit, source, hours),
                query.linear_search(journal, needle, limit, source, hours, now=NOW),
                malformed=False,
            )
        _same(
            _recent(journal, limit, source, hours),
            query.linear_recent(journal, limit, source, hours, now=NOW),
        )
        prefix = data.draw(st.sampled_from(["", "/w", "/w/P", "/W", "/x/日"]))
        _same(
            _workspace(journal, prefix, limit, hours),
            query.linear_workspace_events(journal, prefix, limit, hours, now=NOW),
        )
        index.close_pooled()


# -- through the command line -------------------------------------------------------------


def test_recent_and_query_through_the_cli_use_and_refresh_the_index(
    urchin: Urchin, journal_path: Path
) -> None:
    _write(journal_path, _numbered(25), b"oops\n")
    found = urchin("query", "ALPHA-4", "--json")
    assert found.code == 0, found.stderr
    body = found.json()
    assert body["matched"] == 3 and body["skipped_malformed"] == 1
    db = journal_path.parent / "index.db"
    assert _state(db)[1] == 25
    assert urchin("ingest", "Fresh alpha-4 sighting", "--json").code == 0
    again = urchin("query", "alpha-4", "--json").json()
    assert again["matched"] == 4
    assert again["events"][0]["content"] == "Fresh alpha-4 sighting"
    recent = urchin("recent", "-n", "2", "--json").json()
    assert recent["events"][0]["content"] == "Fresh alpha-4 sighting"
    assert recent["matched"] == 26
    assert _state(db)[1] == 26
    assert not (journal_path.parent / "index.db-wal").exists()  # closed on exit


def test_rebuild_index_reports_counts_and_time(urchin: Urchin, journal_path: Path) -> None:
    empty = urchin("rebuild-index", "--json")
    assert empty.code == 0 and empty.json()["events"] == 0
    assert not journal_path.exists()
    _write(journal_path, _numbered(60), b"{bad\n", b"\xff\xfe\n", _numbered(4, 60)[:30])
    result = urchin("rebuild-index", "--json")
    assert result.code == 0, result.stderr
    body = result.json()
    assert (body["events"], body["malformed"], body["torn_tail"]) == (60, 2, True)
    assert body["seconds"] >= 0 and body["index_path"].endswith("index.db")
    human = urchin("rebuild-index")
    assert human.code == 0
    assert "indexed 60 events" in human.stdout and "2 malformed" in human.stdout
    assert "unfinished" in human.stderr


def test_rebuild_index_recovers_a_damaged_index(urchin: Urchin, journal_path: Path) -> None:
    _write(journal_path, _numbered(20))
    assert urchin("rebuild-index", "--json").json()["events"] == 20
    _garbage_header(journal_path.parent / "index.db")
    result = urchin("rebuild-index", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["events"] == 20
    assert urchin("query", "number 1", "--json").json()["matched"] == 11


def test_rebuild_index_that_cannot_be_written_fails_cleanly(
    urchin: Urchin, journal_path: Path
) -> None:
    _write(journal_path, _numbered(5))
    (journal_path.parent / "index.db").mkdir()
    result = urchin("rebuild-index", "--json")
    assert result.code == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "index_unavailable"
    assert "index.db" in error["message"]
    assert "Traceback" not in result.stderr
    # Reading still works, from the journal.
    assert urchin("query", "number", "--json").json()["matched"] == 5


def test_nan_hours_from_the_cli_is_rejected(urchin: Urchin, journal_path: Path) -> None:
    _write(journal_path, _numbered(2))
    result = urchin("query", "number", "--hours", "nan")
    assert result.code == 2
    assert "hours" in result.stderr and "Traceback" not in result.stderr
