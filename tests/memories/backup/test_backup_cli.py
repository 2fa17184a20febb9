"""memories backup and memories archive through the real console script and daemons."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.memories.backup.conftest import PASSPHRASE, OtherHome
from tests.memories.cli.conftest import Memories
from tests.support import CliResult, wait_for

LINE = PASSPHRASE + "\n"
#: What a recovery renews by design; everything else a view shows must be identical.
RENEWED = ("vault", "revision", "heads", "short_id", "revisions")


def normalized(doc: dict[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in doc.items() if k not in RENEWED}, sort_keys=True).encode()


def listing(home: Memories) -> dict[str, bytes]:
    """The normalized JSON of `ls` and `show` for every listed asset, by id."""
    out = {}
    for summary in home.ok("ls")["summaries"]:
        shown = home.ok("show", summary["id"])
        out[summary["id"]] = normalized(summary) + b"\n" + normalized(shown)
    return out


def everything_printed(*results: CliResult) -> str:
    return "".join(r.stdout + r.stderr for r in results)


def test_a_backup_taken_while_commits_stream_in_restores_a_committed_prefix(
    store: Memories, other_home: OtherHome, tmp_path: Path
) -> None:
    store.ok("sudo")
    committed: list[str] = []  # asset ids in commit order: one writer, one put at a time
    failures: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        index = 0
        while not stop.is_set():
            result = store("put", f"body {index}", "--title", f"memory {index}", "--json")
            if result.code != 0:
                failures.append(result.stderr)
                return
            committed.append(result.json()["asset"])
            index += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_for(lambda: len(committed) >= 3 or failures, timeout=120)
        path = tmp_path / "stream.backup"
        made = store.ok("backup", "create", str(path), "--passphrase-stdin", input=LINE)
        taken = len(committed)
        wait_for(lambda: len(committed) >= taken + 2 or failures, timeout=120)
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not failures and not thread.is_alive()
    assert made["verified"] is True

    restored = other_home.ok("backup", "restore", str(path), "--passphrase-stdin", input=LINE)
    prefix = restored["assets"]
    assert made["assets"] == prefix and 3 <= prefix < len(committed)
    after = listing(other_home)
    assert set(after) == set(committed[:prefix])
    before = listing(store)
    assert {asset: before[asset] for asset in after} == after


def test_bad_backups_and_occupied_homes_are_refused_without_writing(
    store: Memories, other_home: OtherHome, tmp_path: Path
) -> None:
    store.ok("put", "kept", "--title", "kept")
    path = tmp_path / "vault.backup"
    denied = store.fails(3, "backup", "create", str(path), "--passphrase-stdin", input=LINE)
    assert "sudo" in denied["message"] and not path.exists()
    store.ok("sudo")
    store.ok("backup", "create", str(path), "--passphrase-stdin", input=LINE)
    again = store.fails(1, "backup", "create", str(path), "--passphrase-stdin", input=LINE)
    assert again["code"] == "conflict"
    store.ok("backup", "create", str(path), "--passphrase-stdin", "--force", input=LINE)

    wrong = "not the right passphrase"
    bad = store.fails(3, "backup", "verify", str(path), "--passphrase-stdin", input=wrong + "\n")
    assert "passphrase" in bad["message"] and wrong not in bad["message"]

    occupied = store.fails(1, "backup", "restore", str(path), "--passphrase-stdin", input=LINE)
    assert occupied["code"] == "conflict"
    assert [s["title"] for s in store.ok("ls")["summaries"]] == ["kept"]

    data = path.read_bytes()
    for damaged in (data[: len(data) - 40], data[:-5] + bytes([data[-5] ^ 1]) + data[-4:]):
        path.write_bytes(damaged)
        human = store("backup", "verify", str(path), "--passphrase-stdin", input=LINE)
        assert human.code == 1 and ("damaged" in human.stderr or "truncated" in human.stderr)
        failed = other_home.fails(
            1, "backup", "restore", str(path), "--passphrase-stdin", input=LINE
        )
        assert failed["code"] == "integrity"
        status = other_home.ok("status")
        assert status["initialized"] is False


def test_links_conflicts_credentials_and_privacy_survive_a_restore(
    store: Memories, other_home: OtherHome, tmp_path: Path
) -> None:
    store.ok("sudo")
    secret = "s3cr3t-token-value"
    token = store.ok("credential", "put", "deploy token", "--secret-stdin", input=secret)
    a = store.ok("card", "put", "Service A", "--type", "knowledge", "--body", "a")
    b = store.ok("card", "put", "Service B", "--type", "knowledge", "--body", "b")
    store.ok("link", a["short_id"], b["short_id"], "--relation", "depends-on")
    diary = store.ok("put", "private words", "--title", "diary", "--private")
    doc = store.ok("put", "v1", "--title", "doc")
    store.ok("edit", doc["short_id"], "v2 laptop")
    store.ok("edit", doc["short_id"], "v2 phone", "--base", doc["revision"], "--fork")
    path = tmp_path / "vault.backup"
    results = [store("backup", "create", str(path), "--passphrase-stdin", input=LINE)]
    assert results[0].code == 0
    results.append(store("backup", "verify", str(path), "--passphrase-stdin", input=LINE))
    assert results[1].code == 0 and "intact" in results[1].stdout

    results.append(other_home("backup", "restore", str(path), "--passphrase-stdin", input=LINE))
    assert results[2].code == 0 and "only you and this new device" in results[2].stdout
    graph = other_home.ok("graph")
    edges = {(e["source"], e["target"], e["relation"]) for e in graph["edges"]}
    assert edges == {(a["asset"], b["asset"], "depends-on")}
    conflicts = other_home.ok("conflicts")["summaries"]
    assert [c["id"] for c in conflicts] == [doc["asset"]]
    titles = {s["title"] for s in other_home.ok("ls")["summaries"]}
    assert "diary" not in titles and {"deploy token", "doc", "Service A"} <= titles
    assert other_home.fails(3, "show", diary["short_id"])["code"] == "denied"
    shown = other_home("show", token["short_id"])
    results.append(shown)
    assert shown.code == 0 and "deploy token" in shown.stdout
    results.append(other_home("archive", "ls"))
    assert results[-1].code == 0 and "doc" in results[-1].stdout
    history = other_home.ok("archive", "show", doc["short_id"])
    assert len(history["entries"]) == 3 and history["asset"]["restored_as"] == doc["asset"]
    results.append(other_home("archive", "show", doc["short_id"]))
    assert other_home.ok("verify")["ok"] is True

    assert secret not in everything_printed(*results)
    assert PASSPHRASE not in everything_printed(*results)
    assert secret.encode() not in path.read_bytes()
    other_home.ok("sudo")
    assert other_home.ok("show", diary["short_id"])["body"] == "private words"
