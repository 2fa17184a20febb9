"""Paired devices (pairing, then one bundle for membership and keys) sync their writes and audit
records through a folder; a revocation travels the same way: the revoked device's later writes
are quarantined on the desk, and the laptop learns of it and stops writing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memories import paths
from memories.config import load_settings
from memories.store import Store
from memories.vault import Vaults
from tests.memories.devices.test_cli_devices import FLOOR_KDF, PASSWORD, Home, join
from tests.memories.devices.test_cli_devices import homes as homes  # the fixture, re-exported
from tests.memories.sync.devices import allow_new_device


def desk_name(home: Home) -> str:
    return str(home.ok("status")["identity"]["device_name"])


@pytest.mark.timeout(300)
def test_paired_devices_sync_and_a_revoked_device_is_quarantined(
    homes: dict[str, Home],
    tmp_path: Path,
) -> None:
    desk, laptop = homes["desk"], homes["laptop"]
    desk.ok("init", *FLOOR_KDF, "--user-name", "Olga")
    laptop_device = join(desk, laptop, tmp_path)
    desk.ok("put", "desk note", "--title", "desk note")
    desk.ok("vault", "export", "personal", "--out", str(tmp_path / "b1.bundle"))
    laptop.ok("vault", "import", str(tmp_path / "b1.bundle"))

    shared = tmp_path / "Syncthing" / "memories"
    for home in (desk, laptop):
        home.ok("sync", "add", "folder", str(shared))
    laptop.ok("put", "written on the laptop", "--title", "laptop note")
    assert laptop.ok("sync", "now")["errors"] == []
    assert desk.ok("sync", "now")["merged"] == 1  # signed by the laptop, allowed by the policy
    assert desk.titles("personal") == {"desk note", "laptop note"}
    desk.ok("put", "second from desk", "--title", "desk again")
    desk.ok("sync", "now")
    assert laptop.ok("sync", "now")["merged"] == 1
    assert laptop.titles("personal") == {"desk note", "laptop note", "desk again"}

    # The desk's audit records travelled too: the laptop shows what the desk did there.
    records = laptop.ok("audit", "--devices", "--vault", "personal")["records"]
    assert {r["name"] for r in records} == {desk_name(desk)}
    assert "asset.put" in {r["action"] for r in records}

    # Revoked: the laptop's later writes reach the folder but never the desk's vault.
    assert desk("sudo").code == 0
    desk.ok("device", "revoke", laptop_device, "--vault", "personal")
    laptop.ok("put", "sneaky", "--title", "sneaky")
    laptop.ok("sync", "now")
    report = desk.ok("sync", "now")
    assert report["merged"] == 0 and report["quarantined"] == 2
    assert "sneaky" not in desk.titles("personal")
    entries = {e["type"]: e for e in desk.ok("quarantine", "ls")["quarantine"]}
    assert set(entries) == {"revision", "audit"}
    assert "does not allow" in entries["revision"]["reason"]
    assert "revoked device" in entries["audit"]["reason"]  # its records of the sneaky write
    shown = desk.ok("quarantine", "show", entries["revision"]["object"][:12])["quarantined"]
    assert shown["device"] == laptop_device
    # Only the user clears it, here: discarded, it never comes back.
    for entry in entries.values():
        desk.ok("quarantine", "discard", entry["object"])
    desk.ok("sync", "now")
    assert desk.ok("quarantine", "ls")["quarantine"] == []
    assert "sneaky" not in desk.titles("personal")

    # The revocation reached the laptop through the folder and took effect there: its write
    # after the revocation left its own view (into its quarantine), and it writes no more.
    caught_up = laptop.ok("sync", "now")
    assert caught_up["policies"] == 1 and caught_up["quarantined"] == 1
    assert "sneaky" not in laptop.titles("personal")
    assert "epoch" in laptop.ok("quarantine", "ls")["quarantine"][0]["reason"]
    refused = laptop.fails(3, "put", "after revocation", "--title", "late")
    assert "not allowed to write" in refused["message"]


def _offline_policy_change(home: Home) -> None:
    """With its daemon stopped, the device's user allows one more device of theirs."""
    home.stop()
    env = {**os.environ, **home.env}
    with Store.open(load_settings(env).store_path, state_dir=paths.state_dir(env)) as store:
        store.unlock(PASSWORD)
        vaults = Vaults(store)
        allow_new_device(vaults)
        vaults.close()


@pytest.mark.timeout(300)
def test_a_permission_fork_is_shown_and_resolved_from_the_command_line(
    homes: dict[str, Home], tmp_path: Path
) -> None:
    desk, laptop = homes["desk"], homes["laptop"]
    desk.ok("init", *FLOOR_KDF, "--user-name", "Olga")
    join(desk, laptop, tmp_path)
    shared = tmp_path / "Dropbox" / "memories"
    for home in (desk, laptop):
        home.ok("sync", "add", "folder", str(shared))
        home.ok("sync", "now")
    for home in (desk, laptop):
        _offline_policy_change(home)
        assert home("unlock").code == 0  # its daemon starts again, locked
    laptop.ok("sync", "now")
    assert desk.ok("sync", "now")["forks"] == 1
    [fork] = desk.ok("sync", "forks")["forks"]
    assert fork["name"] == "personal" and fork["can_resolve"] is True
    assert len(fork["local"]) == len(fork["incoming"]) == 1
    assert fork["local"][0]["id"] != fork["incoming"][0]["id"]
    assert desk.ok("sync", "status")["forks"] == 1
    table = desk("sync", "forks")
    assert table.code == 0 and "incoming branch" in table.stdout, table.stderr
    # Resolving needs elevation, then signs over both branches with a fresh key.
    assert desk.fails(3, "sync", "resolve-fork", "--keep", "local")["code"] == "denied"
    assert desk("sudo").code == 0
    resolved = desk.ok("sync", "resolve-fork", "--keep", "local")["resolved"]
    assert resolved["discarded"] == [fork["incoming"][0]["id"]] and resolved["epoch"] == 2
    assert desk.ok("sync", "forks")["forks"] == []
    desk.ok("sync", "now")
    laptop.ok("sync", "now")
    assert laptop.ok("sync", "forks")["forks"] == []
    epochs = {v["name"]: v["epoch"] for v in laptop.ok("vault", "list")["vaults"]}
    assert epochs["personal"] == 2
    laptop.ok("put", "after the fork", "--title", "after")
    laptop.ok("sync", "now")
    desk.ok("sync", "now")
    assert "after" in desk.titles("personal")
