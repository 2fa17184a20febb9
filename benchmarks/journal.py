"""Journal append throughput and linear query speed, each against a same-run baseline.

- append: ``Journal.append`` (in-process lock + flock + torn-tail check, one write per
  line) against compact ``json.dumps`` of the same events + ``os.write`` on one
  kept-open O_APPEND descriptor with no locking; also against dicts built in advance.
- durable append: ``Journal(durable=True)`` against ``os.write`` + ``os.fsync`` per line.
- query: ``urchin.query.linear_search`` (falls back to ``search``) over 100,000 events
  against ``grep -ci`` on the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import report
from urchin import query
from urchin.event import Event, EventKind
from urchin.journal import Journal

SOURCES = ["claude", "codex", "git", "shell", "copilot", "gemini", "opencode", "cli"]


def _events(count: int) -> list[Event]:
    return [
        Event.create(
            f"event {i}: refactored module {i % 97} and ran the tests; " + "details " * (i % 20),
            SOURCES[i % len(SOURCES)],
            EventKind.CONVERSATION,
            workspace=f"/home/dev/project-{i % 13}",
            tags=("bench",) if i % 3 == 0 else (),
        )
        for i in range(count)
    ]


def _baseline_append(path: Path, events: list[Event], prebuilt: bool = False) -> float:
    """json.dumps + os.write per event on one kept-open O_APPEND descriptor, no locking.

    By default the event-to-dict step runs inside the timed loop, as it does for the
    journal, so the ratio isolates the write path (locks, checks). ``prebuilt`` takes
    the dicts out of the loop too: a stricter floor, reported for information.
    """
    dicts = [event.to_json() for event in events] if prebuilt else None
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    start = time.perf_counter()
    if dicts is not None:
        for data in dicts:
            os.write(fd, (json.dumps(data, separators=(",", ":")) + "\n").encode("utf-8"))
    else:
        for event in events:
            data = event.to_json()
            os.write(fd, (json.dumps(data, separators=(",", ":")) + "\n").encode("utf-8"))
    elapsed = time.perf_counter() - start
    os.close(fd)
    return len(events) / elapsed


def _journal_append(path: Path, events: list[Event], durable: bool = False) -> float:
    journal = Journal(path, durable=durable)
    start = time.perf_counter()
    for event in events:
        journal.append(event)
    elapsed = time.perf_counter() - start
    journal.close()
    return len(events) / elapsed


def _baseline_fsync(path: Path, events: list[Event]) -> float:
    lines = [event.to_line() for event in events]
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    start = time.perf_counter()
    for line in lines:
        os.write(fd, line)
        os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return len(lines) / elapsed


def _best(runs: int, func: object, *args: object) -> float:
    assert callable(func)
    return max(func(*args) for _ in range(runs))


def run(quick: bool = False) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="urchin-bench-"))
    try:
        count = 20_000 if quick else 100_000
        events = _events(count)
        rounds = 2 if quick else 3
        baseline = _best(rounds, lambda: _baseline_append(tmp / f"b{time.time_ns()}", events))
        ours = _best(rounds, lambda: _journal_append(tmp / f"j{time.time_ns()}", events))
        report("journal", "append_lines_per_s", ours, "lines/s", baseline, events=count)
        floor = _best(rounds, lambda: _baseline_append(tmp / f"p{time.time_ns()}", events, True))
        report("journal", "append_vs_prebuilt_dicts", ours, "lines/s", floor, events=count)

        durable_count = 300 if quick else 2_000
        few = events[:durable_count]
        base_sync = _baseline_fsync(tmp / "fsync-base", few)
        ours_sync = _journal_append(tmp / "fsync-ours", few, durable=True)
        report("journal", "durable_append_lines_per_s", ours_sync, "lines/s", base_sync)

        path = tmp / "query.jsonl"
        journal = Journal(path)
        journal.append_many(events)
        journal.close()
        linear = getattr(query, "linear_search", query.search)
        needles = ["module 42", "PROJECT-7", "details details details", "no such text"]
        times: list[float] = []
        grep_times: list[float] = []
        for needle in needles:
            start = time.perf_counter()
            linear(Journal(path), needle, 20, None, None)
            times.append(time.perf_counter() - start)
            if shutil.which("grep"):
                start = time.perf_counter()
                subprocess.run(["grep", "-ci", needle, str(path)], capture_output=True, check=False)
                grep_times.append(time.perf_counter() - start)
        mean_ms = 1000 * sum(times) / len(times)
        grep_ms = 1000 * sum(grep_times) / len(grep_times) if grep_times else None
        report(
            "journal",
            "linear_query_ms",
            mean_ms,
            "ms",
            grep_ms,
            higher_is_better=False,
            events=count,
            baseline_name="grep -ci",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
