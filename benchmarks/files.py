"""Streamed files: the daemon's extra memory while it stores and returns 8, 32 and 64 MiB files.

An in-process :class:`memories.service.Service` (the daemon's core, without the socket) takes
``file_upload_start`` / ``file_upload_chunk`` (4 MiB each) / ``file_upload_finish``, then
``file_download_start`` / ``file_download_chunk`` until done. The client side makes each chunk
as it sends it (random bytes, hashed on the way) and drops each chunk it receives after hashing
it, so what is measured is the service's own memory: the ``tracemalloc`` peak during the
transfer above what was allocated before it (``peak_extra``). SQLite's page cache is C memory
that ``tracemalloc`` does not see; it is bounded by SQLite's own cache size, not by the file.

Each line reports ``peak_extra`` against the file size (``ratio`` = peak_extra / size). Goal:
flat, i.e. ``peak_extra`` roughly the same absolute amount (a few 4 MiB frames) at every size,
so the ratio falls as the file grows. Before streaming it was about 5.5x the size for a put and
8.5x for a get. A last line per direction checks the 64 MiB round trip's digest.

``--quick``: 8 and 16 MiB.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks import report
from memories.config import load_settings
from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.service import Caller, Service, parse_request
from memories.service.requests.files import CHUNK_BYTES
from memories.store import KdfCost

MIB = 1024 * 1024
PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
CALLER = Caller("cli:bench")


def _call(service: Service, data: dict[str, Any]) -> dict[str, Any]:
    return service.handle(parse_request(data), CALLER)


def _put(service: Service, size: int) -> tuple[str, str, int]:
    """Upload ``size`` random bytes; returns (asset, digest, peak extra bytes)."""
    gc.collect()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    digest = hashlib.sha256()
    upload = _call(service, {"op": "file_upload_start", "name": "bench.bin", "size": size})
    offset = 0
    while offset < size:
        chunk = os.urandom(min(CHUNK_BYTES, size - offset))
        digest.update(chunk)
        request = {"op": "file_upload_chunk", "upload": upload["upload"], "offset": offset}
        _call(service, {**request, "data": b64u_encode(chunk)})
        offset += len(chunk)
        del chunk
    sha = "sha256:" + digest.hexdigest()
    saved = _call(service, {"op": "file_upload_finish", "upload": upload["upload"], "sha256": sha})
    peak = tracemalloc.get_traced_memory()[1] - before
    return str(saved["asset"]), sha, peak


def _get(service: Service, asset: str) -> tuple[str, int]:
    """Download ``asset``; returns (digest of what arrived, peak extra bytes)."""
    gc.collect()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    digest = hashlib.sha256()
    opened = _call(service, {"op": "file_download_start", "ref": asset})
    offset, done = 0, False
    while not done:
        request = {"op": "file_download_chunk", "download": opened["download"], "offset": offset}
        answer = _call(service, request)
        part = b64u_decode(answer["data"])
        digest.update(part)
        offset += len(part)
        done = bool(answer["done"])
        del part, answer
    peak = tracemalloc.get_traced_memory()[1] - before
    return "sha256:" + digest.hexdigest(), peak


def run(*, quick: bool = False) -> None:
    sizes = [8, 16] if quick else [8, 32, 64]
    with tempfile.TemporaryDirectory(prefix="bench-files-") as tmp:
        home = Path(tmp)
        for name in (
            "HOME",
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_RUNTIME_DIR",
        ):
            folder = home / name.lower()
            folder.mkdir(mode=0o700)
            os.environ[name] = str(folder)
        os.environ["MEMORIES_HOME"] = str(home / "memories")
        settings = dataclasses.replace(load_settings(), max_file_mib=max(sizes))
        service = Service(settings, kdf_cost=FAST)
        try:
            _call(service, {"op": "init", "password": PASSWORD})
            tracemalloc.start()
            try:
                for mib in sizes:
                    size = mib * MIB
                    asset, sha, put_peak = _put(service, size)
                    got, get_peak = _get(service, asset)
                    for direction, peak in (("put", put_peak), ("get", get_peak)):
                        report(
                            "files",
                            f"{direction}_peak_extra_{mib}mib",
                            peak / MIB,
                            "MiB",
                            baseline=size / MIB,
                            higher_is_better=True,  # ratio = peak_extra / size: lower is flatter
                            ratio_means="peak_extra/size",
                            size_mib=mib,
                        )
                    report(
                        "files",
                        f"round_trip_{mib}mib_digest_matches",
                        1.0 if got == sha else 0.0,
                        "bool",
                    )
            finally:
                tracemalloc.stop()
        finally:
            service.close()
