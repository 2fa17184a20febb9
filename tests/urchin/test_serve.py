from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import free_port, script, wait_for


@pytest.fixture
def local_model_log(isolated_home: Path) -> Path:
    path = isolated_home / ".local" / "share" / "urchin" / "local-model.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"prompt": "first prompt", "model": "llama3"}\n', encoding="utf-8")
    return path


@pytest.fixture
def server(local_model_log: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    proc = subprocess.Popen(
        [script("urchin"), "serve", "--port", str(port), "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(healthy, timeout=20)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _contents(journal_path: Path) -> list[str]:
    if not journal_path.exists():
        return []
    return [json.loads(line)["content"] for line in journal_path.read_bytes().splitlines()]


def test_serve_collects_on_each_tick_and_accepts_http(
    server: tuple[subprocess.Popen[bytes], int], local_model_log: Path, journal_path: Path
) -> None:
    proc, port = server
    wait_for(lambda: "first prompt" in _contents(journal_path))

    with local_model_log.open("a", encoding="utf-8") as handle:
        handle.write('{"prompt": "second prompt"}\n')
    wait_for(lambda: "second prompt" in _contents(journal_path), timeout=10)

    response = httpx.post(
        f"http://127.0.0.1:{port}/ingest",
        json={"content": "pushed over http", "source": "test"},
        timeout=5,
    )
    assert response.status_code == 200
    assert "pushed over http" in _contents(journal_path)

    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr.decode()
    assert b"collection tick" in stderr
    assert b"Traceback" not in stderr
    checkpoint = journal_path.parents[1] / "checkpoints" / "local-model.json"
    assert checkpoint.exists()
    # Nothing was collected twice across the many ticks.
    contents = _contents(journal_path)
    assert contents.count("first prompt") == 1
    assert contents.count("second prompt") == 1


def test_serve_refuses_non_loopback_and_unknown_collectors() -> None:
    wide = subprocess.run(
        [script("urchin"), "serve", "--host", "0.0.0.0"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert wide.returncode == 2
    assert b"loopback" in wide.stderr
    unknown = subprocess.run(
        [script("urchin"), "serve", "--collector", "nope", "--port", str(free_port())],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert unknown.returncode == 2
    assert b"unknown collector" in unknown.stderr
