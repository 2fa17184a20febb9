"""The memories part of the demo: an encrypted vault driven through its command line.

Runs in the demo's throwaway home. The Argon2id floor keeps the demo quick; a real
`memories init` uses the default cost (64 MiB, t=3, p=4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
MEMORIES = str(BIN / "memories")
TIMEOUT = 60.0
FLOOR_KDF = ("--kdf-time-cost", "1", "--kdf-memory-mib", "19", "--kdf-parallelism", "1")


#: Notes the demo imports (one JSON object per line, as `memories import` reads them).
DEMO_NOTES = [
    {
        "title": "Release checklist",
        "body": "Tag the release, wait for CI, then announce it in #releases.",
        "tags": ["ops"],
    },
    {
        "title": "Database failover",
        "body": "Promote the replica with `pg_ctl promote`, then repoint PgBouncer.",
        "tags": ["ops", "postgres"],
    },
    {
        "title": "金丝雀发布说明",
        "body": "先把新版本部署到百分之五的节点，观察错误率十分钟，再全量发布。",
        "tags": ["部署"],
    },
]


class MemoriesDemoError(Exception):
    """A memories demo step failed."""


def memories(*args: str, input: str = "", expect_code: int = 0, show: bool = True) -> str:
    print(f"$ memories {' '.join(args)}", flush=True)
    try:
        proc = subprocess.run(
            [MEMORIES, *args], input=input, text=True, capture_output=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise MemoriesDemoError(f"memories {args[0]} took longer than {TIMEOUT:.0f}s") from None
    if show:
        sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if proc.returncode != expect_code:
        raise MemoriesDemoError(
            f"memories {' '.join(args)} exited with {proc.returncode}, expected {expect_code}"
        )
    return proc.stdout


def as_json(*args: str, **kwargs: Any) -> Any:
    return json.loads(memories(*args, "--json", show=False, **kwargs))


def run(home: Path, step: Any) -> None:
    """The vault tour; the daemon it starts is always stopped at the end."""
    os.environ["MEMORIES_PASSWORD"] = "correct horse battery staple"  # noqa: S105 - demo only
    try:
        step("memories: create an encrypted vault (the daemon starts on demand)")
        memories("init", *FLOOR_KDF, "--user-name", "demo")
        note = memories("put", "Staging is rebuilt every Sunday at 02:00 UTC", "--tag", "ops")
        ref = note.strip().split()[-1]
        memories("edit", ref, "Staging is rebuilt every Saturday at 02:00 UTC")
        memories("history", ref)
        memories("diff", ref)

        step("memories: typed cards and the link graph")
        fact = as_json(
            "card",
            "put",
            "Postgres 16 upgrade",
            "--type",
            "knowledge",
            "--meta",
            "topic=databases",
            "--meta",
            "confidence=0.9",
        )["short_id"]
        who = as_json("card", "put", "Terse reviewer", "--type", "persona", "--meta", "name=rev")
        memories("link", fact, who["short_id"], "--relation", "reviewed-by")
        memories("graph")

        step("memories: files and a credential that is never shown")
        payload = home / "notes.bin"
        payload.write_bytes(b"binary\x00payload")
        stored = as_json("file", "put", str(payload))["short_id"]
        copy = home / "copy.bin"
        memories("file", "get", stored, "-o", str(copy))
        if copy.read_bytes() != payload.read_bytes():
            raise MemoriesDemoError("the file did not round-trip byte for byte")
        memories("sudo")
        memories("credential", "put", "GitHub token", "--secret-stdin", input="ghp_demo_only\n")
        listing = memories("ls")
        if "ghp_demo_only" in listing:
            raise MemoriesDemoError("a credential value appeared in a listing")

        step("memories: import notes, then search and ask (nothing leaves the machine)")
        notes = home / "notes.jsonl"
        notes.write_text(
            "".join(json.dumps(note, ensure_ascii=False) + "\n" for note in DEMO_NOTES),
            encoding="utf-8",
        )
        memories("import", str(notes))
        found = memories("search", "staging rebuild", "--mode", "bm25", "--limit", "3")
        if "Staging" not in found:
            raise MemoriesDemoError("keyword search missed the staging note")
        memories("search", "金丝雀发布", "--limit", "3")
        answer = memories("ask", "When is staging rebuilt?")
        if "[S1]" not in answer or "ghp_demo_only" in found + answer:
            raise MemoriesDemoError("the answer was not cited, or showed a credential")
        memories("rag", "status")

        step("memories: lock, and nothing can be read until unlock")
        memories("lock")
        memories("show", ref, expect_code=3)
        memories("unlock")
        memories("audit", "--limit", "5")
        memories("status")
    finally:
        subprocess.run([MEMORIES, "daemon", "stop"], capture_output=True, timeout=TIMEOUT)
