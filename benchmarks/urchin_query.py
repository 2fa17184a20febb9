"""Indexed queries against the linear journal scan, in the same run.

Builds a journal of 1,000,000 synthetic events (``--quick``: 100,000) with
realistic shapes: ~200-byte contents mixing prose, paths, identifiers and some
non-ASCII text, 10 sources, 50 workspaces, tags and titles on a share of
events, timestamps over a year with a few back-filled stretches. Then:

- ``index_build_events_per_s``: a full build of ``index.db``, against the build of
  the previous index layout (one row per event holding the whole line and its
  lower-cased text, with a full trigram FTS5 index over it), kept here only for
  this comparison and run on the same journal in the same run;
- ``index_size_ratio``: the index's size against the journal's (``value`` is the
  index in bytes, ``baseline`` the journal; goal ``ratio`` ≥ 1/1.5), and the old
  layout's size beside it;
- ``search_p50_ms`` / ``search_p95_ms``: :func:`urchin.query.search` (index,
  refreshed before every answer) over ~50 varied queries, against
  :func:`urchin.query.linear_search` on every fifth query;
- ``recent_p50_ms`` / ``recent_p95_ms``: :func:`urchin.query.recent` against
  :func:`urchin.query.linear_recent`;
- ``workspace_p50_ms``: :func:`urchin.query.workspace_events` against its linear twin.

Every indexed answer is checked against the linear one where both ran.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks import report
from urchin import query
from urchin.event import Actor, Event, EventKind
from urchin.journal import Journal, JournalEntry
from urchin.query import index

BENCH = "urchin_query"
SOURCES = [
    "claude",
    "codex",
    "copilot",
    "gemini",
    "opencode",
    "git",
    "shell",
    "cli",
    "local-model",
    "cursor",
]
KINDS = [EventKind.CONVERSATION, EventKind.AGENT, EventKind.COMMAND, EventKind.COMMIT]
WORKSPACES = [f"/home/dev/src/project-{n:02d}" for n in range(40)] + [
    f"/srv/work/Team-{n}/service" for n in range(10)
]
TAGS = [
    "substrate",
    "auth",
    "deploy",
    "release",
    "bugfix",
    "refactor",
    "perf",
    "docs",
    "ci",
    "infra",
    "security",
    "review",
]
_FUNCTION_TEXT = (
    "the a to of and in for with on that this is was it as at by be from or not but so "
    "we all then now also when after before into out up if"
)
FUNCTION_WORDS = _FUNCTION_TEXT.split()
_TECH_TEXT = (
    "ran added fixed removed updated refactored tests test build error failing passing module "
    "function class config database migration schema query index cache server client request "
    "response token auth login session user account deploy release branch merge commit rebase "
    "review pipeline docker container kubernetes timeout retry latency memory leak crash panic "
    "warning logging metrics trace span handler router endpoint payload json yaml toml parser "
    "lexer compiler runtime thread async await future promise callback event queue worker "
    "scheduler cron backup restore snapshot journal append fsync lock mutex deadlock race "
    "condition benchmark profile flamegraph allocation garbage collector"
)
TECH_WORDS = _TECH_TEXT.split()
_SYLLABLE_TEXT = "ka lo mi ne ru sa ti vo ze pra gen tor lin mar dex fil qua sto bri cen"
_SYLLABLES = _SYLLABLE_TEXT.split()


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Function words, then technical words, then made-up words (names, jargon),
    weighted by Zipf's law (weight 1/rank) as word frequencies in real text are."""
    made_up = {
        rng.choice(_SYLLABLES) + rng.choice(_SYLLABLES) + rng.choice(_SYLLABLES)
        for _ in range(6_000)
    }
    tech = list(TECH_WORDS)
    rest = sorted(made_up - set(TECH_WORDS))
    rng.shuffle(tech)
    rng.shuffle(rest)
    words = FUNCTION_WORDS + tech + rest
    weights: list[float] = []
    total = 0.0
    for rank in range(1, len(words) + 1):
        total += 1 / rank
        weights.append(total)
    return words, weights


UNICODE = ["café", "naïve", "Größe", "日本語のテキスト", "über", "Ελληνικά", "résumé", "Straße"]
# Query needles: common and rare words, identifiers, paths, phrases, mixed case,
# non-ASCII, two-letter needles (no trigram) and misses.
NEEDLES = [
    "deadlock",
    "flamegraph",
    "Kubernetes",
    "MIGRATION",
    "fsync",
    "handler_0042",
    "handler_7777",
    "module_13",
    "ERR-4040",
    "ticket-9191",
    "project-07",
    "/srv/work/Team-3",
    "Team-9/service",
    "src/project-33",
    "ran the tests",
    "fixed the",
    "Größe",
    "日本語",
    "café",
    "ΕΛΛΗΝΙΚΆ",
    "substrate",
    "security",
    "garbage collector",
    "rebase",
    "no such text anywhere",
    "zzqx",
    "bench-marker-1",
    "latency spike",
    "token refresh",
    "Connection Reset",
    "commit 4f2a",
    "queue worker",
    "json yaml",
    "PANIC",
    "async await",
    "snapshot restore",
    "cursor",
    "local-model",
    "retry timeout",
    "Straße",
    "parser lexer",
    "span handler",
    "backup",
    "config",
    "error",
    "tests",
    "the",
    "ui",
    "go",
    "résumé",
]


def _content(rng: random.Random, i: int, vocabulary: tuple[list[str], list[float]]) -> str:
    words = rng.choices(vocabulary[0], cum_weights=vocabulary[1], k=rng.randint(18, 36))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), f"handler_{rng.randrange(10_000):04d}")
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), f"module_{int(rng.paretovariate(1.2)) % 500}")
    if rng.random() < 0.1:
        words.insert(0, f"ERR-{rng.randrange(10_000)}")
    if rng.random() < 0.05:
        words.append(rng.choice(UNICODE))
    if rng.random() < 0.05:
        words.append(f"ticket-{rng.randrange(10_000)}")
    if rng.random() < 0.1:
        words.append(f"commit {uuid.UUID(int=rng.getrandbits(128)).hex[:7]}")
    if i % 100_000 == 0:
        words.append(f"bench-marker-{i // 100_000}")
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def build_journal(path: Path, count: int, seed: int = 7) -> None:
    """Write ``count`` synthetic events straight to ``path`` (one buffered write stream)."""
    rng = random.Random(seed)
    start = datetime(2025, 5, 1, tzinfo=UTC)
    step = timedelta(days=365) / count
    actor = Actor(account="dev", device="laptop")
    vocabulary = _vocabulary(rng)
    with open(path, "wb") as handle:
        moment = start
        for i in range(count):
            moment += step
            when = moment + timedelta(seconds=rng.uniform(-30, 30))
            if rng.random() < 0.002:
                when -= timedelta(days=rng.uniform(1, 60))  # a back-filled record
            workspace = rng.choice(WORKSPACES)
            event = Event.create(
                _content(rng, i, vocabulary),
                rng.choice(SOURCES),
                rng.choice(KINDS),
                timestamp=when,
                event_id=uuid.UUID(int=rng.getrandbits(128), version=4),
                workspace=workspace,
                session=f"s-{i // 50}",
                title=f"Session {i // 50} in {workspace.rsplit('/', 1)[-1]}"
                if rng.random() < 0.3
                else None,
                tags=rng.sample(TAGS, rng.randint(1, 2)) if rng.random() < 0.4 else (),
                actor=actor,
            )
            handle.write(event.to_line())


# -- the previous index layout, for the build comparison only ------------------------------

_OLD_TABLES = (
    """CREATE TABLE state (
        id INTEGER PRIMARY KEY CHECK (id = 1), dev INTEGER, ino INTEGER,
        byte_offset INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
        events INTEGER NOT NULL, malformed INTEGER NOT NULL, oversized INTEGER NOT NULL,
        peak_ts INTEGER
    )""",
    """CREATE TABLE events (
        byte_offset INTEGER PRIMARY KEY, ts INTEGER NOT NULL, peak_ts INTEGER NOT NULL,
        source BLOB NOT NULL, workspace BLOB, id TEXT NOT NULL, kind TEXT NOT NULL,
        session TEXT, title TEXT, content TEXT NOT NULL, tags TEXT, workspace_text TEXT,
        line BLOB NOT NULL
    )""",
    "CREATE INDEX events_ts ON events (ts)",
    "CREATE INDEX events_source_ts ON events (source, ts)",
    "CREATE INDEX events_workspace_ts ON events (workspace, ts)",
    "CREATE INDEX events_peak_ts ON events (peak_ts)",
    """CREATE VIRTUAL TABLE events_text USING fts5(
        title, content, tags, workspace_text,
        content = 'events', content_rowid = 'byte_offset', columnsize = 0,
        tokenize = 'trigram case_sensitive 1'
    )""",
    "INSERT INTO events_text (events_text, rank) VALUES ('hashsize', 33554432)",
)
_OLD_SEP = "\ufffd"
_OLD_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _old_fold(text: str) -> str:
    lowered = text.lower()
    if lowered.isascii():
        return lowered.replace("\x00", _OLD_SEP) if "\x00" in lowered else lowered
    return _OLD_UNSAFE.sub(_OLD_SEP, lowered)


def _old_safe(text: str | None) -> str | None:
    return text if text is None or text.isascii() else _OLD_UNSAFE.sub(_OLD_SEP, text)


def _old_rows(
    fd: int, batch: list[JournalEntry], peak: int | None
) -> tuple[list[tuple[object, ...]], int | None]:
    base, last = batch[0].offset, batch[-1]
    region = os.pread(fd, last.offset + last.length - base, base)
    rows: list[tuple[object, ...]] = []
    for entry in batch:
        start = entry.offset - base
        event = entry.event
        ts = (event.timestamp - _EPOCH) // timedelta(microseconds=1)
        peak = ts if peak is None or ts > peak else peak
        workspace, tags, title = event.workspace, event.tags, event.title
        keys = (
            event.source.encode("utf-8", "surrogatepass"),
            None if workspace is None else workspace.encode("utf-8", "surrogatepass"),
        )
        about = (str(event.id), _old_safe(str(event.kind)), _old_safe(event.session))
        text = (
            None if title is None else _old_fold(title),
            _old_fold(event.content),
            _OLD_SEP.join([_old_fold(tag) for tag in tags]) if tags else None,
            None if workspace is None else _old_fold(workspace),
        )
        line = region[start : start + entry.length - 1]
        rows.append((entry.offset, ts, peak, *keys, *about, *text, line))
    return rows, peak


def old_build(journal: Journal, db: Path) -> int:
    """Build the previous layout at ``db`` as its code did; returns the events indexed."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -16384")
        conn.execute(f"PRAGMA mmap_size = {1 << 34}")
        conn.execute("BEGIN IMMEDIATE")
        for statement in _OLD_TABLES:
            conn.execute(statement)
        conn.execute("INSERT INTO state VALUES (1, 0, 0, 0, 0, '', 0, 0, 0, NULL)")
        conn.execute("COMMIT")
        fd = os.open(journal.path, os.O_RDONLY)
        try:
            offset, peak, total, chunk = 0, None, 0, 8 * 1024 * 1024
            while True:
                conn.execute("BEGIN IMMEDIATE")
                scan = journal.scan(offset)
                batch: list[JournalEntry] = []
                done = True
                for entry in scan:
                    batch.append(entry)
                    full = entry.offset + entry.length - offset >= chunk
                    if full or len(batch) >= 2_000:
                        rows, peak = _old_rows(fd, batch, peak)
                        total += _old_insert(conn, rows)
                        batch = []
                    if full:
                        done = False
                        break
                if batch:
                    rows, peak = _old_rows(fd, batch, peak)
                    total += _old_insert(conn, rows)
                offset = scan.stats.end_offset
                head = hashlib.sha256(os.pread(fd, 4096, 0)).hexdigest()
                conn.execute(
                    "UPDATE state SET byte_offset = ?, head_len = 4096, head_hash = ?,"
                    " events = ?, peak_ts = ? WHERE id = 1",
                    (offset, head, total, peak),
                )
                conn.execute("COMMIT")
                if done:
                    break
        finally:
            os.close(fd)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return total


def _old_insert(conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> int:
    conn.executemany(
        "INSERT OR IGNORE INTO events (byte_offset, ts, peak_ts, source, workspace, id, kind,"
        " session, title, content, tags, workspace_text, line)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.executemany(
        "INSERT INTO events_text (rowid, title, content, tags, workspace_text)"
        " VALUES (?, ?, ?, ?, ?)",
        [(row[0], *row[8:12]) for row in rows],
    )
    return len(rows)


def _db_bytes(db: Path) -> int:
    return sum(
        os.path.getsize(f"{db}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{db}{suffix}")
    )


def _timed(func: Callable[[], query.QueryResult]) -> tuple[float, query.QueryResult]:
    start = time.perf_counter()
    result = func()
    return (time.perf_counter() - start) * 1000, result


def _pct(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _same(a: query.QueryResult, b: query.QueryResult, label: str) -> None:
    if [e.id for e in a.events] != [e.id for e in b.events] or a.matched != b.matched:
        raise AssertionError(f"indexed and linear answers differ for {label!r}")


def run(quick: bool = False) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="urchin-bench-"))
    try:
        count = 100_000 if quick else 1_000_000
        path = tmp / "events.jsonl"
        started = time.perf_counter()
        build_journal(path, count)
        write_s = time.perf_counter() - started
        journal = Journal(path)
        report(
            BENCH,
            "journal_write_s",
            write_s,
            "s",
            higher_is_better=False,
            events=count,
            bytes=path.stat().st_size,
        )

        journal_bytes = path.stat().st_size
        old_db = tmp / "old-index.db"
        started = time.perf_counter()
        old_events = old_build(journal, old_db)
        old_s = time.perf_counter() - started
        old_bytes = _db_bytes(old_db)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{old_db}{suffix}").unlink(missing_ok=True)

        started = time.perf_counter()
        status = index.rebuild(journal)
        build_s = time.perf_counter() - started
        index.close_pooled()  # checkpoints the WAL: the size below is the whole index
        if old_events != status.events:
            raise AssertionError("the old and the new build indexed different events")
        report(
            BENCH,
            "index_build_events_per_s",
            status.events / build_s,
            "events/s",
            old_events / old_s,
            events=status.events,
            seconds=round(build_s, 2),
            old_seconds=round(old_s, 2),
            baseline_is="the previous index layout's build, same journal, same run",
        )
        new_bytes = _db_bytes(index.index_path(journal))
        report(
            BENCH,
            "index_size_ratio",
            new_bytes,
            "bytes",
            journal_bytes,
            higher_is_better=False,
            index_to_journal=round(new_bytes / journal_bytes, 3),
            old_index_to_journal=round(old_bytes / journal_bytes, 3),
            goal="index_to_journal <= 1.5",
        )

        now = datetime(2026, 5, 1, tzinfo=UTC)
        cases: list[tuple[str, str | None, float | None]] = []
        for n, needle in enumerate(NEEDLES):
            source = SOURCES[n % len(SOURCES)] if n % 7 == 3 else None
            hours = 24.0 * 30 if n % 11 == 5 else None
            cases.append((needle, source, hours))

        def indexed(case: tuple[str, str | None, float | None]) -> query.QueryResult:
            return query.search(journal, case[0], 20, case[1], case[2], now=now)

        def linear(case: tuple[str, str | None, float | None]) -> query.QueryResult:
            return query.linear_search(journal, case[0], 20, case[1], case[2], now=now)

        fast: list[float] = []
        slow: list[float] = []
        fast_sampled: list[float] = []
        for n, case in enumerate(cases):
            runs = [_timed(lambda case=case: indexed(case)) for _ in range(3)]  # type: ignore[misc]
            best = statistics.median(ms for ms, _ in runs)
            fast.append(best)
            if n % 5 == 0:
                ms, reference = _timed(lambda case=case: linear(case))  # type: ignore[misc]
                slow.append(ms)
                fast_sampled.append(best)
                _same(runs[0][1], reference, case[0])
        base50, base95 = _pct(slow, 50), _pct(slow, 95)
        report(
            BENCH,
            "search_p50_ms",
            _pct(fast, 50),
            "ms",
            base50,
            higher_is_better=False,
            queries=len(fast),
            linear_queries=len(slow),
            events=count,
        )
        report(BENCH, "search_p95_ms", _pct(fast, 95), "ms", base95, higher_is_better=False)
        report(
            BENCH,
            "search_sampled_p50_ms",
            _pct(fast_sampled, 50),
            "ms",
            base50,
            higher_is_better=False,
            note="index p50 over the same queries the linear scan ran",
        )

        recent_cases: list[tuple[str | None, float | None]] = [
            (None, None),
            ("git", None),
            (None, 24.0),
            ("claude", 24.0 * 7),
            ("cursor", None),
        ]
        fast = []
        slow = []
        for n, (source, hours) in enumerate(recent_cases * 10):
            ms, result = _timed(lambda s=source, h=hours: query.recent(journal, 20, s, h, now=now))  # type: ignore[misc]
            fast.append(ms)
            if n < len(recent_cases):
                lin_ms, reference = _timed(
                    lambda s=source, h=hours: query.linear_recent(journal, 20, s, h, now=now)  # type: ignore[misc]
                )
                slow.append(lin_ms)
                _same(result, reference, f"recent {source} {hours}")
        report(
            BENCH,
            "recent_p50_ms",
            _pct(fast, 50),
            "ms",
            _pct(slow, 50),
            higher_is_better=False,
            queries=len(fast),
            linear_queries=len(slow),
        )
        report(BENCH, "recent_p95_ms", _pct(fast, 95), "ms", _pct(slow, 95), higher_is_better=False)

        prefixes = [
            "/home/dev/src/project-07",
            "/srv/work/Team-3",
            "/srv/work",
            "/home",
            "/nowhere",
        ]
        fast = []
        slow = []
        for n, prefix in enumerate(prefixes * 10):
            ms, result = _timed(lambda p=prefix: query.workspace_events(journal, p, 20, now=now))  # type: ignore[misc]
            fast.append(ms)
            if n < len(prefixes):
                lin_ms, reference = _timed(
                    lambda p=prefix: query.linear_workspace_events(journal, p, 20, now=now)  # type: ignore[misc]
                )
                slow.append(lin_ms)
                _same(result, reference, f"workspace {prefix}")
        report(
            BENCH,
            "workspace_p50_ms",
            _pct(fast, 50),
            "ms",
            _pct(slow, 50),
            higher_is_better=False,
            queries=len(fast),
            linear_queries=len(slow),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
