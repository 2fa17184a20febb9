"""Collector throughput and memory: the claude and codex collectors over synthetic transcripts.

Each collector reads a synthetic transcript set (~200 MB; ``--quick``: ~20 MB) on
its first run, appending every event to a real journal through the real write path
with redaction on (the built-in rules; one prompt and one command in eight carry a
credential, and the run checks that none reaches the journal). The baseline,
measured in the same run over the same files, is a parse-only pass: ``json.loads``
of every line, the least any reader of these files must do. The goal is a ratio of
at least 0.3 (``goal_ratio``).

Every measurement runs in its own child process, so ``ru_maxrss`` is that run's
peak. Each collector runs at two sizes with the same number of files (each file
four times longer at the larger size); files are streamed and what a run remembers
is bounded, so the peak should stay flat (``*_peak_rss`` ratio near 1).
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks import report

FILES = 16
GOAL = 0.3
ROOT = Path(__file__).resolve().parent.parent
_OUTPUT = "x" * 70 + "\n"  # one line of tool output
# A credential the built-in redaction rules recognise; it must never reach the journal.
SECRET = "ghp_" + "Z9" * 18


def _with_secret(n: int, text: str) -> str:
    return f"{text} (token {SECRET})" if n % 8 == 0 else text


# -- synthetic transcripts ------------------------------------------------------------------


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _stamp(n: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_777_629_600 + n)) + ".000Z"


def _codex_turns(thread: str) -> Iterator[str]:
    yield _dumps(
        {
            "timestamp": _stamp(0),
            "type": "session_meta",
            "payload": {"id": thread, "cwd": "/home/dev/app", "originator": "codex_cli_rs"},
        }
    )
    n = 0
    while True:
        n += 1
        at = _stamp(n)
        text = _with_secret(n, f"turn {n}: make the retry logic in module {n % 31} idempotent")
        output = _OUTPUT * 28
        items: list[tuple[str, dict[str, object]]] = [
            (
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            ),
            ("event_msg", {"type": "user_message", "message": text}),
            (
                "response_item",
                {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "Q" * 600},
            ),
            (
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": _dumps(
                        {"cmd": _with_secret(n + 4, f"pytest -q tests/test_{n}.py")}
                    ),
                    "call_id": f"call_{n}",
                },
            ),
            (
                "event_msg",
                {
                    "type": "exec_command_end",
                    "call_id": f"call_{n}",
                    "command": ["bash", "-lc", f"pytest -q tests/test_{n}.py"],
                    "exit_code": 0,
                    "aggregated_output": output,
                },
            ),
            (
                "response_item",
                {"type": "function_call_output", "call_id": f"call_{n}", "output": output},
            ),
            (
                "event_msg",
                {"type": "token_count", "info": {"total_token_usage": {"input_tokens": n * 900}}},
            ),
            (
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [
                        {"type": "output_text", "text": f"Done with turn {n}; tests pass."}
                    ],
                },
            ),
        ]
        for kind, payload in items:
            yield _dumps({"timestamp": at, "type": kind, "payload": payload})


def _claude_turns(session: str) -> Iterator[str]:
    n = 0
    parent: str | None = None
    while True:
        n += 1
        at = _stamp(n)
        envelope = {
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/app",
            "sessionId": session,
            "version": "2.0.0",
            "gitBranch": "main",
            "timestamp": at,
        }
        tool_id = f"toolu_{session[:8]}_{n}"
        message_id = f"msg_{session[:8]}_{n}"
        records: list[dict[str, object]] = [
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": _with_secret(n, f"turn {n}: fix the flaky test {n % 17}"),
                },
            },
            {
                "type": "assistant",
                "requestId": f"req_{n}",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": f"Looking at test {n}."}],
                    "usage": {"input_tokens": 10, "output_tokens": 20},
                },
            },
            {
                "type": "assistant",
                "requestId": f"req_{n}",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Bash",
                            "input": {
                                "command": _with_secret(n + 4, f"pytest -q tests/test_{n}.py")
                            },
                        }
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_id,
                            "content": _OUTPUT * 40,
                            "is_error": False,
                        }
                    ],
                },
            },
        ]
        for body in records:
            line_id = str(uuid.uuid4())
            yield _dumps({"parentUuid": parent, **envelope, **body, "uuid": line_id})
            parent = line_id


def _fill(path: Path, lines: Iterator[str], size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
            written += len(line) + 1
            if written >= size:
                return


def build_codex(root: Path, total: int) -> list[Path]:
    """A CODEX_HOME with a state DB and ``FILES`` rollouts of ``total`` bytes in all."""
    conn = sqlite3.connect(root / "state_5.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL,"
        " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, cwd TEXT NOT NULL,"
        " title TEXT NOT NULL, archived INTEGER NOT NULL DEFAULT 0,"
        " first_user_message TEXT NOT NULL DEFAULT '', created_at_ms INTEGER,"
        " updated_at_ms INTEGER)"
    )
    files = []
    for i in range(FILES):
        thread = str(uuid.UUID(int=i + 1))
        path = (
            root
            / "sessions"
            / "2026"
            / "05"
            / "01"
            / f"rollout-2026-05-01T10-00-{i:02d}-{thread}.jsonl"
        )
        _fill(path, _codex_turns(thread), total // FILES)
        at = 1_777_629_600 + i
        conn.execute(
            "INSERT INTO threads VALUES (?, ?, ?, ?, '/home/dev/app', ?, 0, ?, ?, ?)",
            (thread, str(path), at, at, f"task {i}", f"task {i}", at * 1000, at * 1000),
        )
        files.append(path)
    conn.close()
    return files


def build_claude(root: Path, total: int) -> list[Path]:
    """A Claude config folder with ``FILES`` transcripts of ``total`` bytes in all."""
    files = []
    for i in range(FILES):
        session = str(uuid.UUID(int=i + 1))
        path = root / "projects" / "-home-dev-app" / f"{session}.jsonl"
        _fill(path, _claude_turns(session), total // FILES)
        files.append(path)
    return files


# -- one measured run, in a child process ---------------------------------------------------


def _child(kind: str, root: Path, work: Path) -> dict[str, float]:
    """Run one measurement in this process and return its numbers."""
    files = [Path(line) for line in (root / "files.txt").read_text(encoding="utf-8").split("\n")]
    if kind == "parse":
        start = time.perf_counter()
        count = 0
        for path in files:
            with path.open("rb") as handle:
                for line in handle:
                    json.loads(line)
                    count += 1
        elapsed = time.perf_counter() - start
        return {"seconds": elapsed, "count": count, "rss_kb": _rss_kb()}

    from urchin.collectors.base import CheckpointStore, Collector, run_collector
    from urchin.ephemeral import Ephemeral
    from urchin.identity import Identity
    from urchin.journal import Journal
    from urchin.recorder import Recorder

    collector: Collector
    if kind == "codex":
        from urchin.collectors.codex import CodexCollector

        collector = CodexCollector(root)
    else:
        from urchin.collectors.claude import ClaudeCollector

        collector = ClaudeCollector(root)
    journal = work / "events.jsonl"
    # The default recorder: built-in redaction rules, ignore files, ephemeral check.
    recorder = Recorder(Journal(journal), Ephemeral(work))
    start = time.perf_counter()
    result = run_collector(collector, recorder, Identity.resolve(), CheckpointStore(work))
    elapsed = time.perf_counter() - start
    # The peak is taken before the check below, which reads the whole journal.
    rss_kb = _rss_kb()
    if result.errors:
        raise SystemExit(f"{kind} collector failed: {result.errors}")
    with journal.open("rb") as handle:
        if any(SECRET.encode() in line for line in handle):
            raise SystemExit(f"{kind} collector wrote a credential unredacted")
    return {"seconds": elapsed, "count": result.new, "rss_kb": rss_kb}


def _rss_kb() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _measure(kind: str, root: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="urchin-bench-") as work:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.collect", kind, str(root), work],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child {kind} failed: {proc.stderr.strip()[-500:]}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def _bench(name: str, build: Callable[[Path, int], list[Path]], total: int) -> None:
    peaks: list[tuple[float, float, int]] = []
    for size in (total // 4, total):
        with tempfile.TemporaryDirectory(prefix=f"urchin-{name}-") as folder:
            root = Path(folder)
            files = build(root, size)
            (root / "files.txt").write_text("\n".join(map(str, files)), encoding="utf-8")
            megabytes = sum(path.stat().st_size for path in files) / 1e6
            # Baseline and collector alternate, best of two each, to even out a noisy machine.
            baseline = min((_measure("parse", root) for _ in range(2)), key=_seconds)
            run = min((_measure(name, root) for _ in range(2)), key=_seconds)
        peaks.append((megabytes, run["rss_kb"] / 1024, int(run["count"])))
        report(
            "collect",
            f"{name}_throughput",
            megabytes / run["seconds"],
            "MB/s",
            megabytes / baseline["seconds"],
            size_mb=round(megabytes, 1),
            events=int(run["count"]),
            events_per_s=round(run["count"] / run["seconds"]),
            redaction="on",
            baseline_kind="json.loads of every line",
            baseline_lines_per_s=round(baseline["count"] / baseline["seconds"]),
            goal_ratio=GOAL,
        )
    (small_mb, small_peak, small_events), (large_mb, large_peak, large_events) = peaks
    extra_events = max(1, large_events - small_events)
    report(
        "collect",
        f"{name}_peak_rss",
        large_peak,
        "MB",
        small_peak,
        higher_is_better=False,
        size_mb=round(large_mb, 1),
        baseline_size_mb=round(small_mb, 1),
        events=large_events,
        baseline_events=small_events,
        bytes_per_extra_event=round((large_peak - small_peak) * 1024 * 1024 / extra_events),
        note="baseline is the same collector on files a quarter the size",
    )


def _seconds(measured: dict[str, float]) -> float:
    return measured["seconds"]


def run(quick: bool = False) -> None:
    total = (20 if quick else 200) * 1_000_000
    _bench("codex", build_codex, total)
    _bench("claude", build_claude, total)


if __name__ == "__main__":
    kind, root, work = sys.argv[1:4]
    sys.stdout.write(json.dumps(_child(kind, Path(root), Path(work))))
