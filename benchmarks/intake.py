"""HTTP intake throughput with durable writes, against a raw write+fsync loop.

Starts ``urchin intake`` as a subprocess on a free loopback port and lets 8
clients post events as fast as the server acknowledges them. The clients are 8
keep-alive connections on one asyncio loop in this process, writing pre-built
HTTP/1.1 requests and reading only each answer's status line and length, so on
a small machine the client leaves the CPU to the server it measures. Only
acknowledged events (status 200) count, and every acknowledgement means the
line was fsynced, so the fair baseline is one ``os.write`` + ``os.fsync`` per
line on a file in the same folder. Disk speed on shared machines drifts by an
order of magnitude within seconds, so baseline and intake phases alternate and
the ratio is taken over the sums.

Besides throughput, each line reports CPU time per event: the server process
(split into its event-loop thread and the rest, mainly the commit thread) and
this client process, so a reader can see where the time goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from benchmarks import report

CLIENTS = 8
_CLOCK_TICK = os.sysconf("SC_CLK_TCK")


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


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


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
        if _healthy(port):
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("urchin intake did not become healthy within 30 s")


@dataclass
class _Cpu:
    """CPU seconds of a process: its main (event-loop) thread and the whole process."""

    main: float = 0.0
    total: float = 0.0

    def __sub__(self, other: _Cpu) -> _Cpu:
        return _Cpu(self.main - other.main, self.total - other.total)

    def __add__(self, other: _Cpu) -> _Cpu:
        return _Cpu(self.main + other.main, self.total + other.total)


def _stat_seconds(path: str) -> float:
    # The command name in parentheses may hold spaces; fields after it are fixed.
    with open(path, encoding="utf-8", errors="replace") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICK


def _server_cpu(pid: int) -> _Cpu | None:
    """User + system CPU time of a process and of its main thread (Linux); None elsewhere."""
    try:
        return _Cpu(
            _stat_seconds(f"/proc/{pid}/task/{pid}/stat"), _stat_seconds(f"/proc/{pid}/stat")
        )
    except OSError:
        return None


def _request(port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


def _requests(
    port: int, path: str, per_client: int, batch: int, round_no: int
) -> list[list[bytes]]:
    """Whole HTTP requests per client, built before the clock starts."""
    out: list[list[bytes]] = []
    for client in range(CLIENTS):
        events = [_event(client, round_no * per_client + i) for i in range(per_client)]
        if batch == 1:
            bodies = [json.dumps(e).encode() for e in events]
        else:
            groups = [events[i : i + batch] for i in range(0, per_client, batch)]
            bodies = [json.dumps({"events": g}).encode() for g in groups]
        out.append([_request(port, path, body) for body in bodies])
    return out


def _whole_batch(size: int) -> Callable[[bytes], bool]:
    """A check that a batch answer accepted all ``size`` events."""

    def check(body: bytes) -> bool:
        answer = json.loads(body)
        return isinstance(answer, dict) and answer.get("accepted") == size

    return check


class _Client(asyncio.Protocol):
    """One keep-alive connection: sends its requests one at a time, each after the last answer."""

    def __init__(
        self,
        requests: list[bytes],
        check: Callable[[bytes], bool] | None,
        done: asyncio.Future[int],
    ) -> None:
        self.requests = requests
        self.check = check
        self.done = done
        self.acked = 0
        self._next = 0
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport but offer its methods.
        self._transport = cast(asyncio.Transport, transport)

    def start(self) -> None:
        self._send_next()

    def _send_next(self) -> None:
        assert self._transport is not None
        if self._next == len(self.requests):
            if not self.done.done():
                self.done.set_result(self.acked)
            return
        self._transport.write(self.requests[self._next])
        self._next += 1

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(buffer[:end]).lower()
        at = head.find(b"\r\ncontent-length:")
        if at < 0:
            self._fail("an answer without content-length")
            return
        stop = head.find(b"\r\n", at + 2)
        length = int(head[at + 17 : stop if stop > 0 else len(head)])
        total = end + 4 + length
        if len(buffer) < total:
            return
        status = int(head[9:12])
        body = bytes(buffer[end + 4 : total])
        del buffer[:total]
        if buffer:
            self._fail("an answer nobody asked for")
            return
        if status != 200 or (self.check is not None and not self.check(body)):
            self._fail(f"HTTP {status}")
            return
        self.acked += 1
        self._send_next()

    def _fail(self, why: str) -> None:
        if not self.done.done():
            self.done.set_exception(RuntimeError(why))
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(RuntimeError("the server closed the connection"))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


@dataclass
class _Phase:
    seconds: float
    acked: int
    client_cpu: float
    server_cpu: _Cpu | None


async def _post_all(
    port: int, pid: int, requests: list[list[bytes]], check: Callable[[bytes], bool] | None
) -> _Phase:
    """Every connection posts its requests in turn; connections are set up before the clock."""
    loop = asyncio.get_running_loop()
    clients: list[_Client] = []
    try:
        for mine in requests:
            client = _Client(mine, check, loop.create_future())
            await loop.create_connection(lambda c=client: c, "127.0.0.1", port)  # type: ignore[misc]
            clients.append(client)
        server_before = _server_cpu(pid)
        cpu_before = time.process_time()
        start = time.perf_counter()
        for client in clients:
            client.start()
        acked = sum(await asyncio.gather(*(client.done for client in clients)))
        seconds = time.perf_counter() - start
        client_cpu = time.process_time() - cpu_before
        server_after = _server_cpu(pid)
    finally:
        for client in clients:
            client.close()
    server = None
    if server_before is not None and server_after is not None:
        server = server_after - server_before
    return _Phase(seconds, acked, client_cpu, server)


def _per_event(seconds: float, events: int) -> float:
    return round(seconds / events * 1e6, 1)


async def _measure(
    port: int,
    pid: int,
    folder: Path,
    *,
    path: str,
    batch: int,
    rounds: int,
    per_client: int,
    baseline_lines: int,
) -> int:
    acked = 0
    intake_seconds = baseline_seconds = client_cpu = 0.0
    server: _Cpu | None = _Cpu()
    check = None if batch == 1 else _whole_batch(batch)
    for round_no in range(rounds):
        baseline_seconds += _fsync_loop(folder / "baseline.jsonl", baseline_lines)
        requests = _requests(port, path, per_client, batch, round_no)
        phase = await _post_all(port, pid, requests, check)
        intake_seconds += phase.seconds
        client_cpu += phase.client_cpu
        acked += phase.acked * batch
        server = None if server is None or phase.server_cpu is None else server + phase.server_cpu
    report(
        "intake",
        "ingest_acked_events_per_s" if batch == 1 else "batch_acked_events_per_s",
        acked / intake_seconds,
        "events/s",
        rounds * baseline_lines / baseline_seconds,
        clients=CLIENTS,
        events=acked,
        batch=batch,
        server_cpu_us_per_event=None if server is None else _per_event(server.total, acked),
        server_loop_thread_cpu_us_per_event=None
        if server is None
        else _per_event(server.main, acked),
        client_cpu_us_per_event=_per_event(client_cpu, acked),
        baseline_metric="write+fsync lines/s",
    )
    return acked


def _runner() -> asyncio.Runner:
    try:
        import uvloop
    except ImportError:
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


async def _run(port: int, pid: int, folder: Path, quick: bool) -> int:
    rounds = 2 if quick else 4
    per_client = 100 if quick else 400
    common = {"rounds": rounds, "baseline_lines": 400 if quick else 1500}
    warm = await _post_all(port, pid, _requests(port, "/ingest", 10, 1, 1000), None)
    single = await _measure(
        port, pid, folder, path="/ingest", batch=1, per_client=per_client, **common
    )
    batched = await _measure(
        port, pid, folder, path="/ingest/batch", batch=100, per_client=per_client * 5, **common
    )
    return warm.acked + single + batched


def run(quick: bool = False) -> None:
    # Same filesystem as the project, not /tmp (which may be tmpfs, where fsync is free).
    with tempfile.TemporaryDirectory(prefix=".bench-intake-", dir=os.getcwd()) as tmp:
        home = Path(tmp)
        port = _free_port()
        proc = _start_intake(home, port)
        try:
            with _runner() as runner:
                expected = runner.run(_run(port, proc.pid, home, quick))
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            if proc.poll() is None:
                proc.kill()
        journal = home / "data" / "urchin" / "journal" / "events.jsonl"
        lines = journal.read_bytes().count(b"\n")
        if lines != expected:
            raise RuntimeError(f"journal has {lines} lines, expected {expected} acknowledged")
