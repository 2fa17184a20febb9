"""``memories mcp``: search through the MCP client, start-up, and the full leak soak.

Run as ``python -m benchmarks mcp``. Everything happens in a throwaway home (its own HOME,
MEMORIES_HOME and XDG folders) with a store at the KDF floor and 500 memories.

Metrics (medians; every ratio is baseline / value, so above 1 is better):

- ``search_round_trip_ms``: ``memory_search`` through the official MCP client over stdio,
  ``memories mcp``, IPC with a grant token and the daemon, against the same ``search`` request
  handled in process by the service (goal: ratio ≥ 0.5, i.e. at most 2x);
- ``spawn_to_tools_list_ms`` (and ``spawn_to_initialize_ms``): spawn of ``memories mcp`` until
  its ``tools/list`` answer, against a minimal ``MCPServer`` with one tool on the same
  interpreter and SDK, spawned in alternating order (goal: ratio ≥ 1/1.2 and < 1500 ms);
- ``import_mcp_ms`` and ``import_memories_cli_ms``: what the SDK's import and the ``memories``
  command line cost on their own, reported apart because both servers pay the first;
- ``leak_soak_calls``: the agent sequence of tests/memories/mcp/leaks.py, 2,000 calls per grant
  scope (200 with --quick) against a vault seeded with canaries; ``leaks`` must be 0 (a leak
  raises instead of reporting).
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
from typing import IO, Any, get_args

import anyio

from benchmarks import report

BENCH = "memories_mcp"
PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FLOOR = {"time_cost": 1, "memory_kib": 19456, "parallelism": 1}
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
WORDS = [
    "deploy", "cluster", "queue", "broker", "release",
    "staging", "backup", "token", "rotate", "schedule",
]  # fmt: skip


def _env(home: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MEMORIES_", "URCHIN_"))},
        "HOME": str(home),
        "MEMORIES_HOME": str(home / "data"),
        "XDG_DATA_HOME": str(home / "share"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }


def _script(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"the {name} console script is not installed")
    return found


def _cli(env: dict[str, str], *args: str, stdin: str = "") -> dict[str, Any]:
    proc = subprocess.run(
        [_script("memories"), *args, "--json"],
        input=stdin.encode("utf-8"),
        capture_output=True,
        env={**env, "MEMORIES_PASSWORD": PASSWORD},
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memories {args[0]} failed: {proc.stdout[-500:]!r}")
    return dict(json.loads(proc.stdout))


def _body(n: int) -> str:
    words = [WORDS[(n * 7 + k) % len(WORDS)] for k in range(40)]
    return f"note {n}: " + " ".join(words)


# -- search: in process and through MCP -------------------------------------------------------


def _in_process_search(env: dict[str, str], query: str, rounds: int) -> list[float]:
    from memories.config import load_settings
    from memories.service import Caller, Service, parse_request
    from memories.store import KdfCost

    service = Service(load_settings(env), kdf_cost=KdfCost(**FLOOR))
    caller = Caller("cli:bench")
    try:
        service.handle(parse_request({"op": "unlock", "password": PASSWORD}), caller)
        request = parse_request({"op": "search", "query": query, "limit": 10})
        service.handle(request, caller)  # the index is built by the first search
        status = parse_request({"op": "rag_status"})
        _until_embedded(lambda: service.handle(status, caller))
        times = []
        for _ in range(rounds):
            began = time.perf_counter()
            service.handle(request, caller)
            times.append(time.perf_counter() - began)
        return times
    finally:
        service.close()


def _until_embedded(status: Any, timeout: float = 600) -> None:
    """Wait until the index's background embedding is done, so both sides of the comparison
    search the same index (hybrid over every chunk) with no embedding work competing."""
    deadline = time.monotonic() + timeout
    while status()["index"]["pending"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the index was still embedding after ten minutes")
        time.sleep(0.2)


def _seed(env: dict[str, str], count: int) -> None:
    from memories.config import load_settings
    from memories.service import Caller, Service, parse_request
    from memories.store import KdfCost

    service = Service(load_settings(env), kdf_cost=KdfCost(**FLOOR))
    caller = Caller("cli:bench")
    try:
        service.handle(parse_request({"op": "init", "password": PASSWORD}), caller)
        for n in range(count):
            request = {"op": "put", "title": f"Note {n}", "body": _body(n), "tags": ["bench"]}
            service.handle(parse_request(request), caller)
    finally:
        service.close()


def _grant(env: dict[str, str], scope: str, name: str) -> str:
    from memories.config import load_settings
    from memories.ipc.client import IpcClient

    with IpcClient(load_settings(env).socket_path, timeout=60) as client:
        client.call({"op": "sudo", "password": PASSWORD})
        answer = client.call({"op": "grant_create", "name": name, "scope": scope})
    return str(answer["token"])


async def _mcp_search(env: dict[str, str], token: str, query: str, rounds: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from memories.config import load_settings
    from memories.ipc.client import IpcClient

    params = StdioServerParameters(
        command=_script("memories"), args=["mcp"], env={**env, "MEMORIES_MCP_TOKEN": token}
    )
    times = []
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            arguments = {"query": query, "limit": 10}
            await session.call_tool("memory_search", arguments)  # connects to the daemon
            with IpcClient(load_settings(env).socket_path, timeout=60) as owner:
                _until_embedded(lambda: owner.call({"op": "rag_status"}))
            for _ in range(rounds):
                began = time.perf_counter()
                result = await session.call_tool("memory_search", arguments)
                times.append(time.perf_counter() - began)
                if result.is_error:
                    raise RuntimeError("memory_search failed in the benchmark")
    return times


# -- start-up ---------------------------------------------------------------------------------


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
                raise RuntimeError("the server answered an error")
            return dict(message)


def _start_round(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer and to the tools/list answer."""
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
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        tools = _answer(proc.stdout, 2)["result"]["tools"]
        listed = time.perf_counter() - started
        if not tools:
            raise RuntimeError("the server listed no tools")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, listed


def _spawn_seconds(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True)
    return time.perf_counter() - started


def _start_up(tmp: Path, env: dict[str, str], token: str, rounds: int) -> None:
    minimal = tmp / "minimal_server.py"
    minimal.write_text(MINIMAL_SERVER, encoding="utf-8")
    servers = {
        "memories": ([_script("memories"), "mcp"], {**env, "MEMORIES_MCP_TOKEN": token}),
        "minimal": ([sys.executable, str(minimal)], env),
    }
    for command, server_env in servers.values():  # unmeasured: cold caches
        _start_round(command, server_env)
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for n in range(rounds):
        order = list(servers) if n % 2 == 0 else list(reversed(servers))
        for name in order:
            command, server_env = servers[name]
            timings[name].append(_start_round(command, server_env))

    def median_ms(name: str, which: int) -> float:
        return statistics.median(t[which] for t in timings[name]) * 1000

    for which, metric in ((0, "spawn_to_initialize_ms"), (1, "spawn_to_tools_list_ms")):
        report(
            BENCH,
            metric,
            median_ms("memories", which),
            "ms",
            median_ms("minimal", which),
            higher_is_better=False,
            rounds=rounds,
            baseline_is="a minimal MCPServer with one tool, same interpreter and SDK",
            goal="ratio >= 0.833 (at most 1.2x) and value < 1500 ms",
        )
    bare = statistics.median(_spawn_seconds([sys.executable, "-c", "pass"]) for _ in range(rounds))
    for metric, module in (
        ("import_mcp_ms", "mcp.server.mcpserver"),
        ("import_memories_cli_ms", "memories.cli"),
    ):
        seconds = statistics.median(
            _spawn_seconds([sys.executable, "-c", f"import {module}"]) for _ in range(rounds)
        )
        report(
            BENCH,
            metric,
            seconds * 1000,
            "ms",
            bare * 1000,
            higher_is_better=False,
            baseline_is="python -c pass",
            note=f"import {module} alone",
        )


# -- leak soak --------------------------------------------------------------------------------


async def _soak(env: dict[str, str], calls_per_scope: int) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from tests.memories.mcp.conftest import Client
    from tests.memories.mcp.leaks import agent_calls, leaked, seed_canaries
    from tests.memories.mcp.test_leaks import run_agent

    from memories.config import load_settings
    from memories.ipc.client import IpcClient
    from memories.service.grants import SCOPE_CAPABILITIES, GrantScope

    with IpcClient(load_settings(env).socket_path, timeout=60) as owner:
        seeded = seed_canaries(owner.call, PASSWORD)
        tokens = {}
        for scope in get_args(GrantScope):
            owner.call({"op": "sudo", "password": PASSWORD})
            answer = owner.call({"op": "grant_create", "name": f"soak {scope}", "scope": scope})
            tokens[scope] = str(answer["token"])
    for scope, token in tokens.items():
        params = StdioServerParameters(
            command=_script("memories"), args=["mcp"], env={**env, "MEMORIES_MCP_TOKEN": token}
        )
        began = time.perf_counter()
        with open(os.devnull, "w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=60) as session,
            ):
                await session.initialize()
                client = Client(session)
                writes = "write" in SCOPE_CAPABILITIES[scope]
                await run_agent(client, agent_calls(seeded, calls_per_scope, writes=writes))
        elapsed = time.perf_counter() - began
        found = leaked(client.received)
        if found:
            raise RuntimeError(f"canaries leaked through a {scope} grant: {found}")
        report(
            BENCH,
            "leak_soak_calls",
            len(client.received),
            "calls",
            scope=scope,
            leaks=0,
            calls_per_second=round(len(client.received) / elapsed, 1),
        )


def run(quick: bool = False) -> None:
    rounds = 3 if quick else 9
    search_rounds = 50 if quick else 300
    soak_calls = 200 if quick else 2000
    tmp = Path(tempfile.mkdtemp(prefix="memories-mcp-bench-"))
    home = tmp / "home"
    env = _env(home)
    saved = dict(os.environ)
    # The in-process service finds its rollback anchors through this process's own
    # environment: point it at the throwaway home too, never at the real one.
    os.environ.clear()
    os.environ.update(env)
    try:
        _seed(env, 100 if quick else 500)
        query = "deploy cluster"
        in_process = _in_process_search(env, query, search_rounds)
        _cli(env, "unlock")  # starts the daemon
        token = _grant(env, "read", "bench")
        through_mcp = anyio.run(_mcp_search, env, token, query, search_rounds)
        _start_up(tmp, env, token, rounds)
        anyio.run(_soak, env, soak_calls)
        _cli(env, "daemon", "stop")
        in_process += _in_process_search(env, query, search_rounds)
        report(
            BENCH,
            "search_round_trip_ms",
            statistics.median(through_mcp) * 1000,
            "ms",
            statistics.median(in_process) * 1000,
            higher_is_better=False,
            rounds=search_rounds,
            baseline_is="the same search request handled in process by the service",
            goal="ratio >= 0.5 (at most 2x)",
        )
    finally:
        subprocess.run(
            [_script("memories"), "daemon", "stop"], env=env, capture_output=True, check=False
        )
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(tmp, ignore_errors=True)
