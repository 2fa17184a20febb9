"""HTTP intake throughput with durable writes, against a raw write+fsync loop.

Starts ``urchin intake`` as a subprocess on a free loopback port and lets 8
clients (threads, each with its own keep-alive httpx client) post events as fast
as the server acknowledges them. Every acknowledgement means the line was
fsynced, so the fair baseline is one ``os.write`` + ``os.fsync`` per line on a
file in the same folder. Disk speed on shared machines drifts by an order of
magnitude within seconds, so baseline and intake phases alternate and the ratio
is taken over the sums.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benchmarks import report

CLIENTS = 8
_HEADERS = {"content-type": "application/json"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _event(client: int, number: int) -> dict[str, object]:
    return {
        "content": f"client {client} event {number}: ran the test suite, 3 failures fixed",
        "source": "bench",
        "workspace": "/home/user/dev/project",
        "tags": ["bench"],
    }


def _fsync_loop(path: Path, lines: int) -> float:
    """Seconds for ``lines`` iterations of one write + one fsync."""
    line = json.dumps(_event(0, 0), separators=(",", ":")).encode() + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(lines):
            os.write(fd, line)
            os.fsync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)


def _start_intake(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    for name in list(env):
        if name.startswith("URCHIN_"):
            del env[name]
    urchin = str(Path(sys.executable).parent / "urchin")
    with open(home / "intake.log", "wb") as log:
        proc = subprocess.Popen(
            [urchin, "intake", "--port", str(port)], env=env, stdout=log, stderr=log
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"urchin intake exited early; see {home / 'intake.log'}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("urchin intake did not become healthy within 30 s")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bodies(per_client: int, batch: int, round_no: int) -> list[list[bytes]]:
    """Request bodies per client, encoded before the clock starts."""
    out: list[list[bytes]] = []
    for client in range(CLIENTS):
        events = [_event(client, round_no * per_client + i) for i in range(per_client)]
        if batch == 1:
            out.append([json.dumps(e).encode() for e in events])
        else:
            groups = [events[i : i + batch] for i in range(0, per_client, batch)]
            out.append([json.dumps({"events": g}).encode() for g in groups])
    return out


def _post_all(clients: list[httpx.Client], path: str, bodies: list[list[bytes]]) -> float:
    """Every client posts its bodies in turn; returns the elapsed seconds."""
    failures: list[str] = []
    gate = threading.Barrier(CLIENTS + 1)

    def client(http: httpx.Client, mine: list[bytes]) -> None:
        gate.wait()
        for body in mine:
            reply = http.post(path, content=body, headers=_HEADERS)
            if reply.status_code != 200 or (path.endswith("batch") and reply.json()["errors"]):
                failures.append(f"HTTP {reply.status_code}")
                return

    threads = [
        threading.Thread(target=client, args=(http, mine))
        for http, mine in zip(clients, bodies, strict=True)
    ]
    for thread in threads:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} client(s) failed: {failures[0]}")
    return elapsed


def _measure(
    proc: subprocess.Popen[bytes],
    clients: list[httpx.Client],
    folder: Path,
    *,
    path: str,
    batch: int,
    rounds: int,
    per_client: int,
    baseline_lines: int,
) -> None:
    acked = 0
    intake_seconds = baseline_seconds = 0.0
    cpu_before = _cpu_seconds(proc.pid)
    client_cpu = 0.0
    for round_no in range(rounds):
        baseline_seconds += _fsync_loop(folder / "baseline.jsonl", baseline_lines)
        bodies = _bodies(per_client, batch, round_no)
        started = time.process_time()
        intake_seconds += _post_all(clients, path, bodies)
        client_cpu += time.process_time() - started
        acked += CLIENTS * per_client
    cpu_after = _cpu_seconds(proc.pid)
    cpu_per_event = None
    if cpu_before is not None and cpu_after is not None:
        cpu_per_event = round((cpu_after - cpu_before) / acked * 1e6, 1)
    report(
        "intake",
        "ingest_acked_events_per_s" if batch == 1 else "batch_acked_events_per_s",
        acked / intake_seconds,
        "events/s",
        rounds * baseline_lines / baseline_seconds,
        clients=CLIENTS,
        events=acked,
        batch=batch,
        server_cpu_us_per_event=cpu_per_event,
        client_cpu_us_per_event=round(client_cpu / acked * 1e6, 1),
        baseline_metric="write+fsync lines/s",
    )


def run(quick: bool = False) -> None:
    rounds = 2 if quick else 4
    per_client = 100 if quick else 400
    baseline_lines = 400 if quick else 1500
    # Same filesystem as the project, not /tmp (which may be tmpfs, where fsync is free).
    with tempfile.TemporaryDirectory(prefix=".bench-intake-", dir=os.getcwd()) as tmp:
        home = Path(tmp)
        port = _free_port()
        proc = _start_intake(home, port)
        base = f"http://127.0.0.1:{port}"
        clients = [httpx.Client(base_url=base, timeout=60) for _ in range(CLIENTS)]
        try:
            _post_all(clients, "/ingest", _bodies(10, 1, 1000))  # warm connections
            common = {"rounds": rounds, "baseline_lines": baseline_lines}
            _measure(proc, clients, home, path="/ingest", batch=1, per_client=per_client, **common)
            _measure(
                proc,
                clients,
                home,
                path="/ingest/batch",
                batch=100,
                per_client=per_client * 5,
                **common,
            )
        finally:
            for http in clients:
                http.close()
            proc.terminate()
            proc.wait(timeout=30)
        journal = home / "data" / "urchin" / "journal" / "events.jsonl"
        lines = journal.read_bytes().count(b"\n")
        expected = CLIENTS * (10 + rounds * per_client * 6)
        if lines != expected:
            raise RuntimeError(f"journal has {lines} lines, expected {expected}")
