"""``urchin mcp`` from spawn to its first answers, against a minimal server on the same SDK.

Each round spawns, side by side and in alternating order:

- ``urchin mcp`` (the console script, as an agent launches it) over a journal of
  1,000 events in a throwaway home;
- a minimal server: one ``MCPServer`` with one tool that returns a small object,
  run on stdio with the same interpreter.

and speaks newline-delimited JSON-RPC to it: ``initialize``, then
``notifications/initialized`` and one ``tools/call`` (``urchin_status`` for urchin).
Metrics (medians over the rounds; the ratio is minimal / urchin, above 1 is better):

- ``spawn_to_initialize_ms``: until the ``initialize`` answer arrives;
- ``spawn_to_first_tool_ms``: until the first tool answer arrives (goal: ratio ≥ 1/1.2);
- ``import_mcp_ms``: ``python -c "import mcp"`` against ``python -c pass``, reported
  apart because the SDK's own import (which loads its client too) bounds both servers.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from benchmarks import report
from urchin.event import Event

BENCH = "mcp_start"
PROTOCOL = "2025-11-25"
MINIMAL_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="minimal")


@server.tool()
def ping() -> dict[str, bool]:
    \"\"\"Answer at once.\"\"\"
    return {"ok": True}


server.run("stdio")
"""


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode("utf-8") + b"\n")
    stdin.flush()


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout before answering")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"the server answered an error: {message['error']}")
            return dict(message)


def _round(command: list[str], env: dict[str, str], tool: str) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer and to the first tool answer."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        hello = {"name": "bench", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": hello}
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        _answer(proc.stdout, 1)
        initialized = time.perf_counter() - started
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": tool, "arguments": {}}
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        result = _answer(proc.stdout, 2)["result"]
        answered = time.perf_counter() - started
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result.get('content')}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, answered


def _spawn_seconds(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True)
    return time.perf_counter() - started


def _urchin_script() -> str:
    here = Path(sys.executable).parent / "urchin"
    found = str(here) if here.exists() else shutil.which("urchin")
    if found is None:
        raise RuntimeError("the urchin console script is not installed")
    return found


def run(quick: bool = False) -> None:
    rounds = 3 if quick else 9
    tmp = Path(tempfile.mkdtemp(prefix="urchin-mcp-start-"))
    try:
        home = tmp / "home"
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
        journal = home / ".local" / "share" / "urchin" / "journal" / "events.jsonl"
        journal.parent.mkdir(parents=True)
        with open(journal, "wb") as handle:
            for n in range(1000):
                handle.write(Event.create(f"event {n}", "bench", workspace="/w").to_line())
        minimal = tmp / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER, encoding="utf-8")
        servers = {
            "urchin": ([_urchin_script(), "mcp"], "urchin_status"),
            "minimal": ([sys.executable, str(minimal)], "ping"),
        }
        # One unmeasured round each: the first spawn pays for cold caches (.pyc, pages).
        for command, tool in servers.values():
            _round(command, env, tool)
        timings: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
        for n in range(rounds):
            order = list(servers) if n % 2 == 0 else list(reversed(servers))
            for name in order:
                command, tool = servers[name]
                timings[name].append(_round(command, env, tool))

        def median_ms(name: str, which: int) -> float:
            return statistics.median(t[which] for t in timings[name]) * 1000

        for which, metric in ((0, "spawn_to_initialize_ms"), (1, "spawn_to_first_tool_ms")):
            report(
                BENCH,
                metric,
                median_ms("urchin", which),
                "ms",
                median_ms("minimal", which),
                higher_is_better=False,
                rounds=rounds,
                baseline_is="a minimal MCPServer with one tool, same interpreter and SDK",
            )
        imports = [_spawn_seconds([sys.executable, "-c", "import mcp"]) for _ in range(rounds)]
        bare = [_spawn_seconds([sys.executable, "-c", "pass"]) for _ in range(rounds)]
        report(
            BENCH,
            "import_mcp_ms",
            statistics.median(imports) * 1000,
            "ms",
            statistics.median(bare) * 1000,
            higher_is_better=False,
            baseline_is="python -c pass",
            note="the SDK's own import; both servers above pay it",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
