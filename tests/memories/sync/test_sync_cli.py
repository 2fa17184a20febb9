"""Three stores in separate homes with separate daemons sync through one folder and through a
real ``rclone serve webdav``, driven through the ``memories`` console script."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.memories.cli.conftest import FLOOR_KDF, PASSWORD
from tests.memories.sync.rclone_server import webdav_server
from tests.support import CliResult, run_cli, wait_for

CANARY = "CANARY-sync-plaintext-5d1e"


class Home:
    def __init__(self, root: Path, extra: dict[str, str]) -> None:
        self.root = root
        self.env = {
            "HOME": str(root),
            "XDG_DATA_HOME": str(root / ".local" / "share"),
            "XDG_CONFIG_HOME": str(root / ".config"),
            "XDG_STATE_HOME": str(root / ".local" / "state"),
            "XDG_CACHE_HOME": str(root / ".cache"),
            "MEMORIES_HOME": str(root / ".local" / "share" / "memories"),
            "MEMORIES_PASSWORD": PASSWORD,
            **extra,
        }

    def __call__(self, *args: str) -> CliResult:
        return run_cli("memories", *args, env=self.env, input="", timeout=120)

    def ok(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.code == 0, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        return json.loads(result.stdout)

    def titles(self) -> list[str]:
        listing = self.ok("ls")
        items = listing["summaries"]
        return sorted(item["title"] for item in items)

    def stop(self) -> None:
        run_cli("memories", "daemon", "stop", env=self.env, timeout=30)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Home]]:
    """Three homes holding one vault: the first initialized, the others copies of it made
    while its daemon was stopped (same vault, then diverging)."""
    rclone_config = tmp_path / "rclone.conf"
    monkeypatch.setenv("RCLONE_CONFIG", str(rclone_config))
    extra = {"RCLONE_CONFIG": str(rclone_config)}
    first = Home(tmp_path / "a", extra)
    first.root.mkdir()
    made = [first]
    try:
        assert first("init", *FLOOR_KDF, "--user-name", "Ada", "--json").code == 0
        first.stop()
        for name in ("b", "c"):
            shutil.copytree(first.root, tmp_path / name, ignore=shutil.ignore_patterns("run"))
            made.append(Home(tmp_path / name, extra))
        for home in made:
            assert home("unlock").code == 0
        yield made
    finally:
        for home in made:
            home.stop()


def _three_devices(homes: list[Home], location: list[str], shared: Path) -> None:
    a, b, c = homes
    for home in homes:
        added = home.ok("sync", "add", *location)
        assert added["target"]["kind"] == location[0]
    assert a.ok("put", f"from a {CANARY}", "--title", "from a")
    first = a.ok("sync", "now")
    assert first["up"] >= 2 and first["errors"] == []
    assert b.ok("put", "from b", "--title", "from b")
    second = b.ok("sync", "now")
    assert second["merged"] == 1
    assert c.ok("sync", "now")["merged"] == 2
    assert a.ok("sync", "now")["merged"] == 1
    for home in homes:
        assert home.titles() == ["from a", "from b"]
        status = home.ok("sync", "status")
        assert status["outbox"] == 0 and status["inbox"] == 0 and status["quarantined"] == 0
        assert home.ok("quarantine", "ls") == {"quarantine": []}
    # Canary: no plaintext or password in any object, listing or log.
    files = [p for p in shared.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert CANARY.encode() not in data and PASSWORD.encode() not in data
    for home in homes:
        for log in home.root.rglob("daemon.log*"):
            text = log.read_text(encoding="utf-8", errors="replace")
            assert CANARY not in text and PASSWORD not in text


def test_three_devices_sync_through_one_folder(homes: list[Home], tmp_path: Path) -> None:
    shared = tmp_path / "Dropbox" / "memories"
    _three_devices(homes, ["folder", str(shared)], shared)


def test_three_devices_sync_through_rclone_webdav(homes: list[Home], tmp_path: Path) -> None:
    with webdav_server(tmp_path / "served") as server:
        _three_devices(homes, ["rclone", f"{server.remote}memories"], server.served)
        # rclone's password stays in rclone's config, never in ours or in the storage.
        for path in (tmp_path / "served").rglob("*"):
            if path.is_file():
                assert server.password.encode() not in path.read_bytes()


def test_sync_bad_input_is_a_clear_error_and_nothing_is_added(homes: list[Home]) -> None:
    a = homes[0]
    for args, code in [
        (["sync", "add", "rclone", ":webdav,url=http://x,pass=hunter2:"], 2),
        (["sync", "add", "rclone", "-evil:x"], 2),
        (["sync", "remove", "nothing-like-this"], 1),
        (["sync", "now"], 1),
        (["quarantine", "show", "abcdef12"], 1),
        (["quarantine", "reapply", "zz"], 1),
    ]:
        result = a(*args, "--json")
        assert result.code == code, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stdout + result.stderr
        assert "hunter2" not in result.stdout + result.stderr
    assert a.ok("sync", "status")["targets"] == []
    folder = a.root / "file-not-folder"
    folder.write_text("x", encoding="utf-8")
    assert a("sync", "add", "folder", str(folder), "--json").code == 2
    shared = str(a.root / "shared")
    a.ok("sync", "add", "folder", shared)
    assert a("sync", "add", "folder", shared, "--json").code == 1  # added already
    assert a.ok("sync", "remove", shared)["removed"]["location"] == os.path.realpath(shared)


def test_the_daemon_syncs_by_itself_while_unlocked(homes: list[Home], tmp_path: Path) -> None:
    a, b, _ = homes
    shared = tmp_path / "shared"
    b.stop()
    b.env["MEMORIES_SYNC_INTERVAL_MINUTES"] = "0.02"
    assert b("unlock").code == 0
    for home in (a, b):
        home.ok("sync", "add", "folder", str(shared))
    a.ok("put", "made on a", "--title", "made on a")
    a.ok("sync", "now")
    # b never runs `sync now`: its daemon's periodic pass brings the memory in.
    wait_for(lambda: b.titles() == ["made on a"], timeout=60, interval=0.5)
    assert b.ok("sync", "status")["interval_minutes"] == 0.02
