"""Two devices, each store in its own home with its own daemon, driven through the real
`memories` command line: after `vault import` the laptop lists the desk's audit records of the
vault (`memories audit --devices`), and a bundle with one altered record imports nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memories import paths
from memories.config import load_settings
from memories.crypto import b64u_encode, canonical_bytes
from memories.store import Store
from memories.vault import Vaults
from tests.memories.devices.test_cli_devices import FLOOR_KDF, PASSWORD, Home, join


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Home, Home]]:
    desk, laptop = Home(tmp_path, "desk"), Home(tmp_path, "laptop")
    try:
        yield desk, laptop
    finally:
        desk.stop()
        laptop.stop()


def _resign(home: Home, bundle: Path, out: Path) -> None:
    """The bundle with its first audit record's action changed, signed again by the desk's
    device key (its daemon stopped), so only that record's own signature can tell."""
    doc = json.loads(bundle.read_bytes())
    body: dict[str, Any] = doc["bundle"]
    body["audit"][0]["record"]["action"] = "asset.delete"
    env = {**os.environ, **home.env}
    with Store.open(load_settings(env).store_path, state_dir=paths.state_dir(env)) as store:
        store.unlock(PASSWORD)
        vaults = Vaults(store)
        signature = vaults.identity.device.sign_canonical(body)
        vaults.close()
    out.write_bytes(canonical_bytes({"bundle": body, "signature": b64u_encode(signature)}))


@pytest.mark.timeout(120)
def test_the_laptop_sees_the_desks_audit_records_and_refuses_an_altered_one(
    pair: tuple[Home, Home], tmp_path: Path
) -> None:
    desk, laptop = pair
    created = desk.ok("init", *FLOOR_KDF, "--user-name", "Olga", "--device-name", "desk")
    approver = created["identity"]["device"]
    join(desk, laptop, tmp_path)
    saved = desk.ok("put", "the plan", "--title", "plan")
    desk.ok("show", saved["asset"])  # a read intent about the vault
    bundle = tmp_path / "personal.bundle"
    desk.ok("vault", "export", "personal", "--out", str(bundle))
    desk.stop()
    carried = len(json.loads(bundle.read_bytes())["bundle"]["audit"])

    # One altered record, the bundle signed again: nothing of it is imported.
    _resign(desk, bundle, tmp_path / "altered.bundle")
    error = laptop.fails(1, "vault", "import", str(tmp_path / "altered.bundle"))
    assert "audit record" in error["message"] and "nothing was imported" in error["message"]
    # Then the bundle as the desk wrote it: everything in it is new, so none of the altered
    # one was kept.

    imported = laptop.ok("vault", "import", str(bundle))
    assert imported["revisions"] == 1 and imported["audit"] == carried >= 2
    records = laptop.ok("audit", "--devices", "--vault", "personal")["records"]
    assert len(records) == carried
    assert {(r["device"], r["name"]) for r in records} == {(approver, "desk")}
    assert {"asset.put", "read.intent"} <= {r["action"] for r in records}
    assert saved["asset"] in {r["details"].get("asset") for r in records}
    table = laptop("audit", "--devices", "--origin", "desk")
    assert table.code == 0, table.stderr
    assert "desk" in table.stdout and "read.intent" in table.stdout
    assert laptop.fails(2, "audit", "--origin", "desk")["code"] == "invalid_input"
