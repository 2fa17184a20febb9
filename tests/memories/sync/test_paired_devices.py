"""Paired devices (pairing, then one bundle for membership and keys) sync their writes through a
folder, and after a revocation the revoked device's synced writes are quarantined, not merged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memories.devices.test_cli_devices import FLOOR_KDF, Home, join
from tests.memories.devices.test_cli_devices import homes as homes  # the fixture, re-exported


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

    # Revoked: the laptop's later writes reach the folder but never the desk's vault.
    assert desk("sudo").code == 0
    desk.ok("device", "revoke", laptop_device, "--vault", "personal")
    laptop.ok("put", "sneaky", "--title", "sneaky")
    laptop.ok("sync", "now")
    report = desk.ok("sync", "now")
    assert report["merged"] == 0 and report["quarantined"] == 1
    assert "sneaky" not in desk.titles("personal")
    [entry] = desk.ok("quarantine", "ls")["quarantine"]
    assert "does not allow" in entry["reason"]
    shown = desk.ok("quarantine", "show", entry["object"][:12])["quarantined"]
    assert shown["device"] == laptop_device
    # Only the user clears it, here: discarded, it never comes back.
    desk.ok("quarantine", "discard", entry["object"])
    desk.ok("sync", "now")
    assert desk.ok("quarantine", "ls")["quarantine"] == []
    assert "sneaky" not in desk.titles("personal")
