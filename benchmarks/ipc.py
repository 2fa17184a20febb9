"""The daemon's IPC path against calling the service in process, and CLI start-up cost.

- read round trip: a ``read`` of a 2 KiB memory through ``IpcClient`` to a real daemon
  subprocess, against ``Service.handle`` of the same request in this process (both stores
  built the same way). Goal: p50 overhead under 1 ms. Each read commits its audit intent
  (an fsync), so ``status`` is timed the same way to show the transport's own cost.
- throughput: 16 clients, each an ``IpcClient`` in a process of its own (as agents are),
  reading for a fixed time, against one such client process in the same run. The client
  processes are started and connected before the first round. Rounds alternate (one client,
  then sixteen) and the median of each is reported, so a burst of load on a shared machine
  does not land on one side only. Goal: sixteen clients read at least 4x as fast as one (the
  daemon's one thread answers the reads that arrived together as one batch, with one intent
  commit). One client is bound by its round trip (the daemon's CPU for one read and one
  commit, and the fsync), sixteen by the daemon's CPU per read in a batch, so the ratio moves
  with the disk and with the machine: a slow fsync raises it, a fast one or a machine whose
  cores are busy with other work lowers it.
- file round trip: a file stored and fetched in 4 MiB chunks (``file_upload_*`` /
  ``file_download_*``) through ``IpcClient``, against the same ops in process.
- CLI one-shot: wall time of ``memories show <id> --json`` (a new process, one request)
  against ``python -c pass``.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from benchmarks import report
from memories.config import load_settings
from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.daemon.launcher import start_daemon, stop_daemon
from memories.ipc import IpcClient
from memories.service import Caller, Service, parse_request
from memories.store import KdfCost

PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FLOOR = {"time_cost": 1, "memory_kib": 19456, "parallelism": 1}
BODY = "x" * 2048
MIB = 1024 * 1024
CHUNK = 4 * MIB

Call = Callable[[dict[str, Any]], dict[str, Any]]


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "MEMORIES_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),  # the rollback anchors stay in the throwaway home
        "MEMORIES_PASSWORD": PASSWORD,
    }


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _in_process(home: Path, samples: int) -> tuple[float, float]:
    settings = load_settings(_env(home))
    service = Service(settings, kdf_cost=KdfCost(**FLOOR))
    caller = Caller("cli:bench")
    try:
        service.handle(parse_request({"op": "init", "password": PASSWORD}), caller)
        saved = service.handle(parse_request({"op": "put", "title": "bench", "body": BODY}), caller)
        request = {"op": "read", "ref": saved["asset"]}
        return _timed(lambda: service.handle(parse_request(request), caller), samples)
    finally:
        service.close()


def _timed(call: Callable[[], object], samples: int) -> tuple[float, float]:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return _percentiles(times)


def _in_process_status(home: Path, samples: int) -> float:
    """p50 of ``status`` (unlocked) in process: no commit, so no fsync."""
    settings = load_settings(_env(home))
    service = Service(settings, kdf_cost=KdfCost(**FLOOR))
    try:
        service.handle(parse_request({"op": "unlock", "password": PASSWORD}), Caller("cli:b"))
        status = parse_request({"op": "status"})
        return _timed(lambda: service.handle(status, Caller("cli:bench")), samples)[0]
    finally:
        service.close()


def _file_round_trip(call: Call, data: bytes) -> float:
    """Seconds to store ``data`` in chunks and fetch it back (checked byte for byte)."""
    began = time.perf_counter()
    upload = call({"op": "file_upload_start", "name": "bench.bin", "size": len(data)})["upload"]
    for offset in range(0, len(data), CHUNK):
        part = b64u_encode(data[offset : offset + CHUNK])
        call({"op": "file_upload_chunk", "upload": upload, "offset": offset, "data": part})
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    saved = call({"op": "file_upload_finish", "upload": upload, "sha256": digest})
    opened = call({"op": "file_download_start", "ref": saved["asset"]})
    parts, offset, done = [], 0, False
    while not done:
        answer = call(
            {"op": "file_download_chunk", "download": opened["download"], "offset": offset}
        )
        parts.append(b64u_decode(str(answer["data"])))
        offset += len(parts[-1])
        done = bool(answer["done"])
    elapsed = time.perf_counter() - began
    if b"".join(parts) != data:
        raise RuntimeError("the file came back different")
    return elapsed


def _in_process_file(home: Path, data: bytes) -> float:
    settings = load_settings(_env(home))
    service = Service(settings, kdf_cost=KdfCost(**FLOOR))
    caller = Caller("cli:bench")
    try:
        service.handle(parse_request({"op": "unlock", "password": PASSWORD}), caller)
        return _file_round_trip(lambda r: service.handle(parse_request(r), caller), data)
    finally:
        service.close()


def _throughput(socket_path: Path, asset: str, seconds: float, rounds: int) -> tuple[float, float]:
    """Median reads/s of one client process and of sixteen, measured in alternating rounds."""
    single, sixteen = [], []
    with _Readers(socket_path, asset, 16) as readers:
        for _ in range(rounds):
            single.append(readers.read_for(seconds, 1) / seconds)
            sixteen.append(readers.read_for(seconds, 16) / seconds)
    return statistics.median(single), statistics.median(sixteen)


def _reader(socket_path: str, asset: str, orders: Connection) -> None:
    """One client process: for each order (seconds to read; None to stop), read ``asset``
    over its own connection for that long and answer how many reads completed."""
    with IpcClient(Path(socket_path)) as client:
        client.call({"op": "status"})
        orders.send(0)  # connected
        while (seconds := orders.recv()) is not None:
            done = 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                client.call({"op": "read", "ref": asset})
                done += 1
            orders.send(done)


class _Readers:
    """Client processes, each connected to the daemon and waiting for orders."""

    def __init__(self, socket_path: Path, asset: str, count: int) -> None:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter, as an agent's
        self._pipes: list[Connection] = []
        self._processes: list[BaseProcess] = []
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=_reader, args=(str(socket_path), asset, theirs))
            self._pipes.append(ours)
            self._processes.append(process)

    def __enter__(self) -> _Readers:
        for process in self._processes:
            process.start()
        for pipe in self._pipes:
            pipe.recv()  # every client is connected before the first round
        return self

    def read_for(self, seconds: float, count: int) -> int:
        """Reads the first ``count`` clients complete in ``seconds``, reading at once."""
        pipes = self._pipes[:count]
        for pipe in pipes:
            pipe.send(seconds)
        return sum(int(pipe.recv()) for pipe in pipes)

    def __exit__(self, *exc: object) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
        for process in self._processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()


def run(quick: bool = False) -> None:
    samples = 200 if quick else 1000
    with tempfile.TemporaryDirectory(prefix="memories-ipc-") as tmp:
        root = Path(tmp)
        local_p50, local_p95 = _in_process(root / "local", samples)
        status_local = _in_process_status(root / "local", samples)
        data = os.urandom((8 if quick else 20) * MIB)
        local_file = _in_process_file(root / "local", data)
        env = _env(root / "daemon")
        saved_environ = dict(os.environ)
        os.environ.update(env)
        settings = load_settings(env)
        try:
            start_daemon(settings)
            with IpcClient(settings.socket_path) as client:
                client.call({"op": "init", "password": PASSWORD, "kdf": FLOOR})
                asset = client.call({"op": "put", "title": "bench", "body": BODY})["asset"]
                read = {"op": "read", "ref": asset}
                ipc_p50, ipc_p95 = _timed(lambda: client.call(read), samples)
                status_ipc = _timed(lambda: client.call({"op": "status"}), samples)[0]
            report(
                "ipc",
                "read_p50",
                ipc_p50 * 1000,
                "ms",
                local_p50 * 1000,
                higher_is_better=False,
                baseline_name="in-process Service.handle",
                overhead_ms=round((ipc_p50 - local_p50) * 1000, 3),
                goal="overhead < 1 ms",
            )
            # The transport alone: a request that commits nothing, so no fsync blurs it.
            report(
                "ipc",
                "status_p50",
                status_ipc * 1000,
                "ms",
                status_local * 1000,
                higher_is_better=False,
                baseline_name="in-process Service.handle",
                overhead_ms=round((status_ipc - status_local) * 1000, 3),
            )
            report(
                "ipc", "read_p95", ipc_p95 * 1000, "ms", local_p95 * 1000, higher_is_better=False
            )
            seconds = 2.0 if quick else 3.0
            rounds = 1 if quick else 3
            single, sixteen = _throughput(settings.socket_path, asset, seconds, rounds)
            report(
                "ipc",
                "reads_per_s_16_clients",
                sixteen,
                "req/s",
                single,
                baseline_name="one client",
                rounds=rounds,
                goal="ratio >= 4",
            )
            with IpcClient(settings.socket_path, timeout=120) as client:
                ipc_file = _file_round_trip(client.call, data)
            report(
                "ipc",
                "file_round_trip_mib_per_s",
                len(data) / MIB / ipc_file,
                "MiB/s",
                len(data) / MIB / local_file,
                baseline_name="the same chunked ops in process",
                size_mib=len(data) // MIB,
            )
            memories = str(Path(sys.executable).parent / "memories")
            runs = 5 if quick else 15
            cli, python = [], []
            for _ in range(runs):
                began = time.perf_counter()
                subprocess.run(
                    [memories, "show", asset, "--json"], env=env, check=True, capture_output=True
                )
                cli.append(time.perf_counter() - began)
                began = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                python.append(time.perf_counter() - began)
            report(
                "ipc",
                "cli_show_wall",
                statistics.median(cli) * 1000,
                "ms",
                statistics.median(python) * 1000,
                higher_is_better=False,
                baseline_name="python -c pass",
            )
        finally:
            stop_daemon(settings)
            os.environ.clear()
            os.environ.update(saved_environ)
