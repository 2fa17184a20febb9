"""Backup, verify and restore through the service, over real store files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from memories.backup import read_backup
from memories.errors import ConflictError, DeniedError, IntegrityError, NotFoundError, UsageError
from memories.service import Caller, Service
from memories.service.access import WS_REMOTE
from memories.service.grants import Grant
from memories.service.requests import REQUEST_TYPES, op_name
from memories.vault import Vaults
from memories.vault.operations import load_policy
from tests.memories.backup.conftest import NEW_PASSWORD, PASSPHRASE, backup, restore
from tests.memories.service.support import CLI1, call, put

BACKUP_OPS = {"backup_create", "backup_verify", "backup_restore", "archive_list", "archive_show"}
MCP_ALL = Caller("mcp:all", grant=Grant(name="all", scope="allow_all"))


def elevate(service: Service, password: str = NEW_PASSWORD) -> None:
    call(service, {"op": "sudo", "password": password})


def views(service: Service) -> dict[str, Any]:
    """Every live asset's list summary and read view, without what a restore renews (vault and
    revision ids, and the count of revisions: the restored history is the heads alone)."""
    out: dict[str, Any] = {}
    summaries = call(service, {"op": "list", "all_vaults": True})["summaries"]
    for summary in summaries:
        if summary["title"] == "local_config":
            continue
        view = call(service, {"op": "read", "ref": summary["id"]})
        for doc in (summary, view):
            for renewed in ("vault", "revision", "heads", "short_id", "revisions"):
                doc.pop(renewed, None)
        out[summary["id"]] = {"summary": summary, "view": view}
    return out


def test_backup_ops_are_never_available_over_mcp_or_remote_transports(
    source: Service, tmp_path: Path
) -> None:
    ops = {op_name(model): model for model in REQUEST_TYPES}
    assert set(ops) >= BACKUP_OPS
    for op in BACKUP_OPS:
        assert ops[op].NEEDS.mcp is None and ops[op].NEEDS.remote is False
    request = {"op": "backup_create", "path": str(tmp_path / "b"), "passphrase": PASSPHRASE}
    for caller in (WS_REMOTE, MCP_ALL):
        with pytest.raises(DeniedError):
            call(source, request, caller)
    assert not (tmp_path / "b").exists()


def test_backup_create_needs_elevation(source: Service, tmp_path: Path) -> None:
    request = {"op": "backup_create", "path": str(tmp_path / "b"), "passphrase": PASSPHRASE}
    with pytest.raises(DeniedError, match="elevation"):
        call(source, request, Caller("cli:2"))  # another shell: not elevated
    assert not (tmp_path / "b").exists()


def test_a_backup_file_is_owner_only_versioned_and_leaves_no_temporary_file(
    source: Service, tmp_path: Path
) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    put(source, title="one", body="first body")
    made = backup(source, folder / "vault.backup")
    assert made["verified"] is True and made["ok"] is True
    assert (made["vaults"], made["assets"], made["revisions"]) == (1, 1, 1)
    path = folder / "vault.backup"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(folder) == ["vault.backup"]
    data = path.read_bytes()
    header = json.loads(data[: data.index(b"\n")])
    assert header["t"] == "memories.backup" and header["v"] == 1
    assert header["kdf"]["alg"] == "argon2id" and header["id"] == made["backup"]
    assert b"first body" not in data and b"one" not in data[data.index(b"\n") :]


def test_an_existing_backup_is_kept_unless_overwrite(source: Service, tmp_path: Path) -> None:
    path = tmp_path / "vault.backup"
    path.write_bytes(b"older backup")
    with pytest.raises(ConflictError):
        backup(source, path)
    assert path.read_bytes() == b"older backup"
    backup(source, path, overwrite=True)
    assert read_backup(path, PASSPHRASE).records


def test_a_relative_path_or_a_missing_folder_is_refused(source: Service, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        backup(source, Path("relative.backup"))
    with pytest.raises(NotFoundError):
        backup(source, tmp_path / "no such folder" / "b")


def test_a_short_passphrase_is_refused(source: Service, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="8 characters"):
        backup(source, tmp_path / "b", passphrase="short")
    assert not (tmp_path / "b").exists()


def test_verify_reports_counts(source: Service, tmp_path: Path) -> None:
    put(source, title="one")
    saved = put(source, title="two")
    call(source, {"op": "update", "ref": saved["asset"], "body": "edited"})
    backup(source, tmp_path / "b")
    report = call(
        source, {"op": "backup_verify", "path": str(tmp_path / "b"), "passphrase": PASSPHRASE}
    )
    assert report["ok"] is True and report["problems"] == []
    assert (report["vaults"], report["assets"], report["revisions"]) == (1, 2, 3)


def test_restore_makes_new_device_keys_and_vaults_that_list_only_this_device(
    source: Service, target: Service, tmp_path: Path
) -> None:
    call(source, {"op": "vault_create", "name": "team"})
    put(source, title="personal note")
    put(source, title="team note", vault="team")
    old = call(source, {"op": "status"})["identity"]
    old_vaults = {v["name"]: v["id"] for v in call(source, {"op": "vault_list"})["vaults"]}
    backup(source, tmp_path / "b")

    report = restore(target, tmp_path / "b", device_name="new laptop")
    assert "not carried over" in report["membership"]
    new = call(target, {"op": "status"})["identity"]
    assert new["user"] == old["user"]
    assert new["device"] != old["device"] and new["exchange"] != old["exchange"]
    assert new["device_name"] == "new laptop"
    vaults = {v["name"]: v for v in call(target, {"op": "vault_list"})["vaults"]}
    assert set(vaults) == {"personal", "team", "device"}
    assert {vaults[n]["id"] for n in ("personal", "team")}.isdisjoint(old_vaults.values())
    assert vaults["personal"]["personal"] and vaults["device"]["local"]
    store = target.store
    assert store is not None
    domain = Vaults(store)
    try:
        for name in ("personal", "team"):
            policy = load_policy(store, domain.resolve_vault(name))
            assert policy.members == {new["user"]: "owner"}
            assert policy.devices == (new["device"],)
    finally:
        domain.close()
    assert call(target, {"op": "verify"})["ok"] is True


def test_restore_into_a_home_with_a_store_refuses_and_touches_nothing(
    source: Service, tmp_path: Path
) -> None:
    put(source, title="kept")
    backup(source, tmp_path / "b")
    store = source.store
    assert store is not None
    before = dict(store.entries())
    with pytest.raises(ConflictError):
        restore(source, tmp_path / "b")
    assert source.store is store and dict(store.entries()) == before
    assert [s["title"] for s in call(source, {"op": "list"})["summaries"]] == ["kept"]


@pytest.mark.parametrize("damage", ["wrong passphrase", "truncated", "tampered", "extended"])
def test_a_bad_backup_is_refused_with_a_clear_error_and_nothing_is_written(
    source: Service, target: Service, tmp_path: Path, damage: str
) -> None:
    put(source, title="one", body="x" * 1000)
    path = tmp_path / "b"
    backup(source, path)
    data = path.read_bytes()
    passphrase = PASSPHRASE
    expected: type[Exception] = IntegrityError
    if damage == "wrong passphrase":
        passphrase, expected = "not the passphrase", DeniedError
    elif damage == "truncated":
        path.write_bytes(data[:-10])
    elif damage == "tampered":
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(flipped))
    else:
        path.write_bytes(data + b"\0")
    request = {"op": "backup_verify", "path": str(path), "passphrase": passphrase}
    with pytest.raises(expected) as raised:
        call(target, request)
    assert passphrase not in str(raised.value)
    with pytest.raises(expected):
        restore(target, path, passphrase=passphrase)
    assert not target.initialized
    store_dir = target.settings.store_path.parent
    assert not store_dir.exists() or os.listdir(store_dir) == []


def test_a_backup_from_a_newer_format_is_refused_as_such(target: Service, tmp_path: Path) -> None:
    path = tmp_path / "b"
    path.write_bytes(b'{"t":"memories.backup","v":2}\n')
    with pytest.raises(UsageError, match="newer"):
        call(target, {"op": "backup_verify", "path": str(path), "passphrase": PASSPHRASE})


def test_device_only_vaults_are_not_in_the_backup(
    source: Service, target: Service, tmp_path: Path
) -> None:
    call(source, {"op": "vault_create", "name": "scratch", "local": True})
    put(source, title="only here", body="device-only body", vault="scratch")
    local_ids = {v["id"] for v in call(source, {"op": "vault_list"})["vaults"] if v["local"]}
    assert len(local_ids) == 2  # the init-time device vault and scratch
    path = tmp_path / "b"
    assert backup(source, path)["vaults"] == 1
    snapshot = read_backup(path, PASSPHRASE)
    assert "local" not in snapshot.records
    for key, value in snapshot.records.items():
        assert not any(vault_id in key for vault_id in local_ids)
        if key.startswith(("vault/", "asset/")):
            assert not any(vault_id.encode() in value for vault_id in local_ids)
    restore(target, path)
    names = {v["name"] for v in call(target, {"op": "vault_list"})["vaults"]}
    assert names == {"personal", "device"}
    titles = {s["title"] for s in call(target, {"op": "list", "all_vaults": True})["summaries"]}
    assert "only here" not in titles


def test_live_content_links_and_conflicts_survive_and_history_is_archived(
    source: Service, target: Service, tmp_path: Path
) -> None:
    a = call(source, {"op": "card_put", "title": "A", "card_type": "knowledge", "body": "a"})
    b = call(source, {"op": "card_put", "title": "B", "card_type": "knowledge", "body": "b"})
    gone = call(source, {"op": "card_put", "title": "gone", "card_type": "knowledge"})
    call(source, {"op": "link", "source": a["asset"], "target": b["asset"]})
    call(source, {"op": "link", "source": a["asset"], "target": gone["asset"]})
    call(source, {"op": "tombstone", "ref": gone["asset"]})
    doc = put(source, title="doc", body="v1")
    call(source, {"op": "update", "ref": doc["asset"], "body": "v2 laptop"})
    call(
        source,
        {"op": "update", "ref": doc["asset"], "base": doc["revision"], "fork": True, "body": "v2"},
    )
    before = views(source)
    original = call(source, {"op": "history", "ref": doc["asset"]})["entries"]
    backup(source, tmp_path / "b")

    report = restore(target, tmp_path / "b")
    assert (report["assets"], report["conflicts"], report["deleted"]) == (3, 1, 1)
    assert report["dropped_links"] == 1 and report["new_ids"] == 0
    after = views(target)
    assert after.keys() == before.keys()
    for asset_id, shown in before.items():
        got = after[asset_id]
        assert got["summary"] == shown["summary"]
        assert {k: v for k, v in got["view"].items() if k != "links"} == {
            k: v for k, v in shown["view"].items() if k != "links"
        }
    restored = call(target, {"op": "read", "ref": a["asset"]})
    assert restored["links"] == [{"target": b["asset"], "relation": "related"}]
    graph = call(target, {"op": "graph"})
    assert {(e["source"], e["target"]) for e in graph["edges"]} == {(a["asset"], b["asset"])}
    conflicted = call(target, {"op": "conflicts"})["summaries"]
    assert [s["id"] for s in conflicted] == [doc["asset"]]
    assert len(call(target, {"op": "read", "ref": doc["asset"]})["heads"]) == 2

    listed = call(target, {"op": "archive_list"})
    assert {a["id"] for a in listed["assets"]} == {
        a["asset"],
        b["asset"],
        gone["asset"],
        doc["asset"],
    }
    by_id = {item["id"]: item for item in listed["assets"]}
    assert by_id[gone["asset"]]["restored_as"] is None and by_id[gone["asset"]]["deleted"]
    assert by_id[doc["asset"]]["restored_as"] == doc["asset"]
    shown = call(target, {"op": "archive_show", "ref": doc["asset"][:8]})
    assert [e["revision"] for e in shown["entries"]] == [e["revision"] for e in original]
    assert [e["title"] for e in shown["entries"]] == ["doc"] * 3
    assert call(target, {"op": "verify"})["ok"] is True


def test_private_assets_stay_private_and_credentials_stay_hidden(
    source: Service, target: Service, tmp_path: Path
) -> None:
    secret = "hunter2-very-secret"
    private = put(source, title="diary", body="private body", private=True)
    credential = call(source, {"op": "credential_put", "title": "token", "secret": secret})
    backup(source, tmp_path / "b")
    assert secret.encode() not in (tmp_path / "b").read_bytes()

    report = restore(target, tmp_path / "b")
    assert secret not in json.dumps(report)
    titles = {s["title"] for s in call(target, {"op": "list"})["summaries"]}
    assert "diary" not in titles and "token" in titles
    with pytest.raises(DeniedError):
        call(target, {"op": "read", "ref": private["asset"]})
    with pytest.raises(DeniedError):
        call(target, {"op": "archive_show", "ref": private["asset"]})
    archived = {a["id"] for a in call(target, {"op": "archive_list"})["assets"]}
    assert private["asset"] not in archived
    shown = call(target, {"op": "read", "ref": credential["asset"]})
    assert shown["body"] is None and shown["secret_hidden"] is True

    elevate(target)
    assert call(target, {"op": "read", "ref": private["asset"]})["body"] == "private body"
    archived = {a["id"] for a in call(target, {"op": "archive_list"})["assets"]}
    assert private["asset"] in archived
    store = target.store
    assert store is not None
    domain = Vaults(store)
    try:  # the value itself survived, under the new vault's keys
        assert domain._content(domain._revision(domain.resolve_asset(credential["asset"]).newest))
    finally:
        domain.close()


def test_archive_requests_answer_empty_without_a_recovery(source: Service) -> None:
    assert call(source, {"op": "archive_list"}) == {"vaults": [], "assets": []}
    with pytest.raises(NotFoundError):
        call(source, {"op": "archive_show", "ref": "abcd1234"})


def test_the_restored_store_is_unlocked_with_the_new_password(
    source: Service, target: Service, tmp_path: Path
) -> None:
    put(source, title="one")
    backup(source, tmp_path / "b")
    restore(target, tmp_path / "b")
    call(target, {"op": "lock"})
    with pytest.raises(DeniedError):
        call(target, {"op": "unlock", "password": "service test password"})
    call(target, {"op": "unlock", "password": NEW_PASSWORD})
    audit = call(target, {"op": "audit_list"})["entries"]
    assert "backup.restore" in {entry["action"] for entry in audit}
    assert CLI1.namespace in json.dumps(audit)
