"""End-to-end demo of what exists, in a throwaway home directory.

Run through `make demo`. Never touches the real ~: HOME and the XDG folders point at
a temporary folder that is deleted afterwards (set KEEP_DEMO=1 to keep it). It records
and reads events, collects from the bundled sample agent logs (examples/sample-home/)
and a small git repository, pushes an event through the HTTP intake, searches it over
MCP, writes a daily note, then shows ephemeral mode and the health check. Last, it creates an
encrypted memories vault and tours it through the `memories` command line.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import demo_memories
import httpx
from demo_samples import commit_file, fake_github_token, install_sample_home, make_repo
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent
URCHIN = str(BIN / "urchin")
TIMEOUT = 60.0
# Variables that would point a collector at the real home's agent logs.
FOREIGN_VARS = (
    "HISTFILE",
    "ZDOTDIR",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CODEX_SQLITE_HOME",
    "COPILOT_HOME",
    "GEMINI_CLI_HOME",
)
INTAKE_NOTE = "Release checklist for the webshop signed off by the deploy bot"


class DemoError(Exception):
    """A demo step failed; the message says which and why."""


def step(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m", flush=True)


def expect(condition: object, message: str) -> None:
    if not condition:
        raise DemoError(message)


def urchin(*args: str, input: str | None = None) -> str:
    print(f"$ urchin {' '.join(args)}", flush=True)
    try:
        proc = subprocess.run(
            [URCHIN, *args], input=input, text=True, capture_output=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise DemoError(f"urchin {' '.join(args)} took longer than {TIMEOUT:.0f}s") from None
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if proc.returncode != 0:
        raise DemoError(f"urchin {' '.join(args)} exited with {proc.returncode}")
    return proc.stdout


def describe(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        output = (exc.stderr or exc.stdout or "").strip()
        return f"{' '.join(map(str, exc.cmd))} exited with {exc.returncode}: {output}"
    return str(exc) or type(exc).__name__


def make_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="urchin-demo-"))
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        COLUMNS=os.environ.get("COLUMNS", "120"),
    )
    for name in list(os.environ):
        if name.startswith(("URCHIN_", "MEMORIES_")) or name in FOREIGN_VARS:
            del os.environ[name]
    return home


def record_and_read(project: Path) -> None:
    step("Record a few events")
    where = ("--workspace", str(project))
    urchin(
        "ingest", "Fixed the flaky checkout test", "--source", "claude", "--tag", "tests", *where
    )
    urchin(
        *("ingest", "pytest -x tests/test_checkout.py", "--source", "shell"),
        *("--kind", "command", *where),
    )
    urchin(
        *("ingest", "Use Postgres advisory locks for the job queue", "--source", "cli"),
        *("--kind", "decision", "--title", "job queue locks", *where),
    )
    notes = "Read about CRDTs\nfollow up on sync design\n"
    urchin("ingest", "-", "--source", "notes", "--no-workspace", input=notes)

    step("Read them back")
    urchin("recent", "-n", "10")
    urchin("query", "checkout")
    urchin("query", "LOCKS", "--json")


def new_counts(table: str) -> dict[str, int]:
    """Source → new events, read from the rows of `urchin collect`'s summary table."""
    rows = re.findall(r"^\W*([a-z][a-z-]*)\W+(\d+)\W+\d+\W", table, re.MULTILINE)
    return {name: int(count) for name, count in rows}


def collect(home: Path, project: Path) -> None:
    step("Collect from the agents' own logs (bundled samples, copied into the demo home)")
    for path in install_sample_home(home):
        print(f"  ~/{path}")
    make_repo(project)
    print(f"  git repository {project} with 2 commits")
    counts = new_counts(urchin("collect", "--repo", str(project)))
    for source in ("shell", "claude", "copilot", "gemini", "codex", "opencode", "local-model"):
        expect(counts.get(source, 0) > 0, f"collect recorded nothing from {source}")
    expect(counts.get("git") == 0, "git should only note where branches point on its first run")

    step("One more commit: the next collect reads only what is new")
    commit_file(
        project,
        "shop/payments.py",
        "IDEMPOTENCY_HEADER = 'Idempotency-Key'\n",
        "Add idempotency keys to payment webhooks",
    )
    counts = new_counts(urchin("collect", "--repo", str(project)))
    expect(counts.get("git") == 1, "the second collect did not record the new commit")
    expect(sum(counts.values()) == 1, "the second collect recorded events twice")
    urchin("recent", "-n", "15")

    step("Secrets are redacted before anything is written")
    found = urchin("query", "GITHUB_TOKEN")
    expect("[REDACTED:" in found, "the token in .bash_history was not redacted")
    journal = home / ".local/share/urchin/journal/events.jsonl"
    expect(fake_github_token() not in journal.read_text(encoding="utf-8"), "token in journal")
    print("the journal holds the marker, never the token")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(client: httpx.Client, proc: subprocess.Popen[bytes], log: Path) -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
            raise DemoError(f"urchin intake exited with {proc.returncode}:\n{tail}")
        try:
            response = client.get("/health", timeout=1)
            if response.status_code == 200:
                return response.json()
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise DemoError("urchin intake did not answer /health within 20s")


def intake(home: Path, project: Path) -> None:
    step("HTTP intake: any tool can push events")
    port = free_port()
    log = home / "intake.log"
    print(f"$ urchin intake --port {port} &", flush=True)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [URCHIN, "intake", "--port", str(port), "--log-level", "warning"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            print(f"GET /health -> {json.dumps(wait_healthy(client, proc, log))}")
            body = {"content": INTAKE_NOTE, "source": "deploy-bot", "workspace": str(project)}
            response = client.post("/ingest", json=body)
            print(f"POST /ingest -> {response.status_code} {response.text}")
            expect(response.status_code == 200, "the intake did not accept the event")
            found = client.get("/query", params={"q": "release checklist", "limit": 5})
            print(f"GET /query?q=release+checklist -> {found.status_code}")
            expect(found.status_code == 200, "the intake query failed")
            for event in found.json()["events"]:
                print(f"  {event['timestamp']}  {event['source']}  {event['content']}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(timeout=5)
        print(f"intake stopped with SIGTERM (exit {code})")


async def _mcp_session(errlog: TextIO, query: str) -> dict[str, Any]:
    params = StdioServerParameters(command=URCHIN, args=["mcp"], env=dict(os.environ))
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, read_timeout_seconds=30) as session,
    ):
        info = await session.initialize()
        print(f"connected to {info.server_info.name} {info.server_info.version}")
        tools = await session.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools.tools))
        print(f"call urchin_search {json.dumps({'query': query})}")
        result = await session.call_tool("urchin_search", {"query": query, "limit": 5})
        expect(not result.is_error, f"urchin_search failed: {result.content}")
        expect(isinstance(result.structured_content, dict), "urchin_search returned no JSON")
        assert isinstance(result.structured_content, dict)
        return result.structured_content


def mcp(home: Path) -> None:
    step("MCP: an agent searches the journal (official mcp client, stdio)")
    log = home / "mcp.log"
    with log.open("w", encoding="utf-8") as errlog:
        try:
            found = asyncio.run(asyncio.wait_for(_mcp_session(errlog, "release checklist"), 60))
        except TimeoutError:
            raise DemoError("the MCP session took longer than 60s") from None
    print(f"{found['count']} hit(s):")
    for event in found["events"]:
        print(f"  {event['source']}/{event['kind']}: {event['content']}")
    expect(any(e["content"] == INTAKE_NOTE for e in found["events"]), "MCP search missed it")


def daily_note(home: Path) -> None:
    step("Daily note in the vault (~/brain)")
    (home / "brain").mkdir()
    result = json.loads(urchin("vault", "project", "--json"))
    note = Path(result["path"])
    print(f"--- {note}")
    text = note.read_text(encoding="utf-8")
    print(text.rstrip())
    print("---")
    expect("<!-- URCHIN:start -->" in text and "<!-- URCHIN:end -->" in text, "no note markers")


def main() -> int:
    home = make_home()
    project = home / "dev" / "webshop"
    project.mkdir(parents=True)
    print(f"demo home: {home}")
    started = time.monotonic()
    try:
        record_and_read(project)
        collect(home, project)
        intake(home, project)
        mcp(home)
        daily_note(home)

        step("Ephemeral mode discards writes")
        urchin("ephemeral", "start")
        urchin("ingest", "this is never written")
        urchin("ephemeral", "end")

        step("Health check")
        urchin("doctor")

        demo_memories.run(home, step)
    except (
        DemoError,
        demo_memories.MemoriesDemoError,
        OSError,
        sqlite3.Error,
        subprocess.SubprocessError,
        httpx.HTTPError,
    ) as exc:
        print(f"\ndemo failed: {describe(exc)}", file=sys.stderr)
        if not os.environ.get("KEEP_DEMO"):
            print("(run with KEEP_DEMO=1 to keep the demo home for a look)", file=sys.stderr)
        return 1
    finally:
        if os.environ.get("KEEP_DEMO"):
            print(f"\nkept demo home: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    print(f"\ndemo finished in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
