"""Every op through parse_request and Service.handle over a real store file."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import pytest

from memories import __version__
from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import (
    BusyError,
    ConflictError,
    DeniedError,
    LockedError,
    MemoriesError,
    NotFoundError,
    UsageError,
)
from memories.service import WS_REMOTE, Service, parse_request
from tests.memories.service.support import CLI1, CLI2, PASSWORD, Clock, call, put, sudo


def audit(service: Service, limit: int = 50) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = call(service, {"op": "audit_list", "limit": limit})["entries"]
    return entries


# -- life cycle ----------------------------------------------------------------------------


def test_without_a_store_only_init_and_status_work(fresh: Service) -> None:
    status = call(fresh, {"op": "status"})
    assert status["initialized"] is False and status["unlocked"] is False
    assert status["version"] == __version__
    assert "identity" not in status
    assert call(fresh, {"op": "desktop_status"}) == {"initialized": False, "unlocked": False}
    with pytest.raises(NotFoundError, match="memories init"):
        put(fresh)
    with pytest.raises(NotFoundError, match="memories init"):
        call(fresh, {"op": "unlock", "password": PASSWORD})


def test_init_creates_unlocks_and_describes_the_store(fresh: Service) -> None:
    out = call(
        fresh,
        {"op": "init", "password": PASSWORD, "user_name": "Ada", "device_name": "laptop"},
    )
    assert out["store"] == str(fresh.settings.store_path)
    assert fresh.settings.store_path.exists()
    assert sorted(v["name"] for v in out["vaults"]) == ["device", "personal"]
    assert out["identity"]["user_name"] == "Ada"
    assert out["identity"]["device_name"] == "laptop"
    assert out["identity"]["user"].startswith("sha256:")
    assert fresh.unlocked
    assert [e["action"] for e in audit(fresh)] == ["store.create"]
    with pytest.raises(ConflictError, match="left untouched"):
        call(fresh, {"op": "init", "password": "another"})


def test_init_records_the_local_config_in_the_device_vault(service: Service) -> None:
    sudo(service)
    listed = call(service, {"op": "list", "vault": "device"})["summaries"]
    assert [s["title"] for s in listed] == ["local_config"]
    body = call(service, {"op": "read", "ref": listed[0]["id"]})["body"]
    assert f"client_version: {__version__}" in body
    assert f"data_home: {service.settings.data_home}" in body
    assert f"config_file: {service.settings.config_file}" in body


def test_init_uses_the_requested_kdf_when_none_is_configured(settings: Any, clock: Clock) -> None:
    service = Service(settings, clock=clock)
    try:
        call(
            service,
            {
                "op": "init",
                "password": PASSWORD,
                "kdf": {"time_cost": 1, "memory_kib": 19456, "parallelism": 1},
            },
        )
        assert service.store is not None
        kdf = service.store.kdf
        assert (kdf.time_cost, kdf.memory_kib, kdf.parallelism) == (1, 19456, 1)
    finally:
        service.close()


def test_init_refuses_control_characters_in_names(fresh: Service) -> None:
    with pytest.raises(UsageError, match="the device name contains control characters"):
        call(fresh, {"op": "init", "password": PASSWORD, "device_name": "a\nb"})
    assert not fresh.settings.store_path.exists()


def test_lock_unlock_and_a_wrong_password(service: Service) -> None:
    assert call(service, {"op": "lock"}) == {"locked": True}
    assert not service.unlocked
    with pytest.raises(DeniedError, match="the password is not correct") as caught:
        call(service, {"op": "unlock", "password": "wrong password"})
    assert "wrong password" not in caught.value.message
    assert call(service, {"op": "unlock", "password": PASSWORD})["unlocked"] is True
    assert service.unlocked
    # Unlocking again checks the password and keeps the session.
    assert call(service, {"op": "unlock", "password": PASSWORD})["unlocked"] is True
    with pytest.raises(DeniedError):
        call(service, {"op": "unlock", "password": "wrong"})
    assert service.unlocked


def test_a_new_service_opens_the_store_locked_and_a_second_one_is_busy(
    service: Service, make_service: Callable[[], Service]
) -> None:
    saved = put(service, body="kept")
    with pytest.raises(BusyError, match="in use"):
        make_service()
    service.close()
    again = make_service()
    assert again.initialized and not again.unlocked
    with pytest.raises(LockedError, match="memories unlock"):
        call(again, {"op": "read", "ref": saved["asset"]})
    call(again, {"op": "unlock", "password": PASSWORD})
    assert call(again, {"op": "read", "ref": saved["asset"]})["body"] == "kept"


def test_status_reports_identity_counts_and_the_callers_elevation(service: Service) -> None:
    put(service)
    put(service, private=True)
    status = call(service, {"op": "status"})
    assert status["initialized"] and status["unlocked"]
    assert status["vaults"] == 2
    assert status["assets"] == 3  # two puts and the device vault's local_config
    assert status["identity"]["device_name"] == "test device"
    assert status["elevated"] is False and status["elevated_seconds_left"] == 0
    assert status["idle_lock_seconds"] == 600
    sudo(service, minutes=2)
    status = call(service, {"op": "status"})
    assert status["elevated"] is True and status["elevated_seconds_left"] == 120
    assert call(service, {"op": "status"}, CLI2)["elevated"] is False


def test_locked_store_refuses_every_other_op(service: Service) -> None:
    saved = put(service)
    call(service, {"op": "lock"})
    requests: list[dict[str, Any]] = [
        {"op": "sudo", "password": PASSWORD},
        {"op": "change_password", "old_password": PASSWORD, "new_password": "x"},
        {"op": "vault_create", "name": "work"},
        {"op": "vault_list"},
        {"op": "put", "title": "t"},
        {"op": "read", "ref": saved["asset"]},
        {"op": "update", "ref": saved["asset"], "title": "u"},
        {"op": "tombstone", "ref": saved["asset"]},
        {"op": "resolve", "ref": saved["asset"]},
        {"op": "history", "ref": saved["asset"]},
        {"op": "diff", "ref": saved["asset"]},
        {"op": "list"},
        {"op": "conflicts"},
        {"op": "card_put", "title": "t", "card_type": "knowledge"},
        {"op": "card_types"},
        {"op": "card_type_define", "name": "x", "fields": []},
        {"op": "link", "source": saved["asset"], "target": saved["asset"]},
        {"op": "unlink", "source": saved["asset"], "target": saved["asset"]},
        {"op": "graph"},
        {"op": "file_put", "name": "f", "data": ""},
        {"op": "file_get", "ref": saved["asset"]},
        {"op": "credential_put", "title": "t", "secret": "s"},
        {"op": "audit_list"},
    ]
    for request in requests:
        with pytest.raises(LockedError, match="the vault is locked; run `memories unlock`"):
            call(service, request)
    assert call(service, {"op": "status"})["unlocked"] is False
    assert call(service, {"op": "desktop_status"}) == {"initialized": True, "unlocked": False}
    assert call(service, {"op": "lock"}) == {"locked": True}


# -- content ops ---------------------------------------------------------------------------


def test_vaults_create_and_list(service: Service) -> None:
    info = call(service, {"op": "vault_create", "name": "work", "local": True})
    assert info["name"] == "work" and info["local"] is True and info["role"] == "owner"
    names = [v["name"] for v in call(service, {"op": "vault_list"})["vaults"]]
    assert names == ["device", "personal", "work"]
    with pytest.raises(ConflictError):
        call(service, {"op": "vault_create", "name": "work"})
    saved = put(service, vault="work")
    assert saved["vault"] == info["id"]


def test_put_read_update_history_diff_and_tombstone(service: Service) -> None:
    saved = put(service, title="first", body="one", tags=["b", "a"], source="chat")
    assert set(saved) == {"asset", "revision", "vault", "heads", "short_id"}
    assert saved["heads"] == [saved["revision"]]
    assert saved["asset"].startswith(saved["short_id"]) and len(saved["short_id"]) == 8
    view = call(service, {"op": "read", "ref": saved["short_id"]})
    assert (view["title"], view["body"], view["tags"], view["source"]) == (
        "first",
        "one",
        ["a", "b"],
        "chat",
    )
    updated = call(
        service,
        {"op": "update", "ref": saved["asset"], "base": saved["revision"], "body": "two"},
    )
    assert updated["heads"] == [updated["revision"]]
    view = call(service, {"op": "read", "ref": saved["asset"]})
    assert (view["title"], view["body"], view["revisions"]) == ("first", "two", 2)
    old = call(service, {"op": "read", "ref": saved["asset"], "revision": saved["revision"]})
    assert old["body"] == "one"
    history = call(service, {"op": "history", "ref": saved["short_id"]})
    assert history["asset"] == saved["asset"]
    assert [e["revision"] for e in history["entries"]] == [updated["revision"], saved["revision"]]
    diff = call(service, {"op": "diff", "ref": saved["asset"]})
    assert diff["asset"] == saved["asset"]
    assert "-one" in diff["diff"] and "+two" in diff["diff"]
    gone = call(service, {"op": "tombstone", "ref": saved["asset"]})
    assert gone["asset"] == saved["asset"]
    with pytest.raises(NotFoundError, match="deleted"):
        call(service, {"op": "read", "ref": saved["asset"]})
    assert call(service, {"op": "list"})["summaries"] == []


def test_stale_edits_conflict_fork_and_resolve(service: Service) -> None:
    saved = put(service, body="base")
    first = call(service, {"op": "update", "ref": saved["asset"], "body": "mine"})
    with pytest.raises(ConflictError, match="changed since"):
        call(
            service,
            {"op": "update", "ref": saved["asset"], "base": saved["revision"], "body": "theirs"},
        )
    forked = call(
        service,
        {
            "op": "update",
            "ref": saved["asset"],
            "base": saved["revision"],
            "fork": True,
            "body": "theirs",
        },
    )
    assert sorted(forked["heads"]) == sorted([first["revision"], forked["revision"]])
    conflicts = call(service, {"op": "conflicts"})["summaries"]
    assert [c["id"] for c in conflicts] == [saved["asset"]]
    resolved = call(
        service,
        {
            "op": "resolve",
            "ref": saved["asset"],
            "parents": [first["revision"], forked["revision"]],
            "body": "merged",
            "tags": ["merged"],
        },
    )
    assert resolved["heads"] == [resolved["revision"]]
    assert call(service, {"op": "read", "ref": saved["asset"]})["body"] == "merged"
    assert call(service, {"op": "conflicts"})["summaries"] == []


def test_list_filters(service: Service) -> None:
    memory = put(service, title="plain", tags=["x"])
    card = call(service, {"op": "card_put", "title": "card", "card_type": "knowledge"})
    call(service, {"op": "vault_create", "name": "work"})
    other = put(service, vault="work", title="elsewhere")
    ids = [s["id"] for s in call(service, {"op": "list"})["summaries"]]
    assert set(ids) == {memory["asset"], card["asset"]}
    by_kind = call(service, {"op": "list", "kind": "card"})["summaries"]
    assert [s["id"] for s in by_kind] == [card["asset"]]
    by_type = call(service, {"op": "list", "card_type": "knowledge"})["summaries"]
    assert [s["id"] for s in by_type] == [card["asset"]]
    by_tag = call(service, {"op": "list", "tag": "x"})["summaries"]
    assert [s["id"] for s in by_tag] == [memory["asset"]]
    everywhere = {s["id"] for s in call(service, {"op": "list", "all_vaults": True})["summaries"]}
    assert {memory["asset"], card["asset"], other["asset"]} <= everywhere


def test_cards_types_links_and_graph(service: Service) -> None:
    types = call(service, {"op": "card_types"})["card_types"]
    assert {"knowledge", "brain", "persona", "protected_card"} <= {t["name"] for t in types}
    defined = call(
        service,
        {
            "op": "card_type_define",
            "name": "book",
            "description": "books I read",
            "fields": [
                {"name": "pages", "type": "integer", "required": True, "minimum": 1},
                {"name": "genre", "type": "string", "choices": ["fiction", "essay"]},
            ],
        },
    )
    assert defined["name"] == "book" and len(defined["fields"]) == 2
    assert "book" in {t["name"] for t in call(service, {"op": "card_types"})["card_types"]}
    book = call(
        service,
        {
            "op": "card_put",
            "title": "Dune",
            "card_type": "book",
            "metadata": {"pages": 412, "genre": "fiction"},
            "tags": ["sf"],
        },
    )
    assert call(service, {"op": "read", "ref": book["asset"]})["metadata"] == {
        "pages": 412,
        "genre": "fiction",
    }
    with pytest.raises(UsageError, match="pages"):
        call(service, {"op": "card_put", "title": "x", "card_type": "book", "metadata": {}})
    note = call(service, {"op": "card_put", "title": "Arrakis", "card_type": "knowledge"})
    link = call(
        service,
        {"op": "link", "source": book["asset"], "target": note["asset"], "relation": "about"},
    )
    assert link == {"source": book["asset"], "target": note["asset"], "relation": "about"}
    graph = call(service, {"op": "graph"})
    assert {n["id"] for n in graph["nodes"]} == {book["asset"], note["asset"]}
    assert graph["edges"] == [link]
    removed = call(service, {"op": "unlink", "source": book["asset"], "target": note["asset"]})
    assert removed == {"removed": 1}
    assert call(service, {"op": "graph"})["edges"] == []


def test_files_round_trip(service: Service) -> None:
    data = bytes(range(256)) * 4
    saved = call(
        service,
        {
            "op": "file_put",
            "name": "blob.bin",
            "media_type": "application/octet-stream",
            "data": b64u_encode(data),
            "tags": ["bin"],
        },
    )
    got = call(service, {"op": "file_get", "ref": saved["short_id"]})
    assert got["asset"] == saved["asset"]
    assert (got["name"], got["media_type"], got["size"]) == (
        "blob.bin",
        "application/octet-stream",
        len(data),
    )
    assert b64u_decode(got["data"]) == data
    view = call(service, {"op": "read", "ref": saved["asset"]})
    assert view["title"] == "blob.bin" and view["file"]["size"] == len(data)
    assert "data" not in view["file"]
    with pytest.raises(UsageError, match="'data' must be unpadded base64url"):
        call(service, {"op": "file_put", "name": "x", "data": "A"})
    with pytest.raises(UsageError, match="file_put"):
        put(service, kind="file")
    memory = put(service)
    with pytest.raises(UsageError, match="not a file"):
        call(service, {"op": "file_get", "ref": memory["asset"]})


def test_audit_list_is_newest_first_and_limited(service: Service) -> None:
    for n in range(3):
        put(service, title=f"m{n}")
    entries = audit(service, limit=2)
    assert len(entries) == 2
    assert entries[0]["seq"] > entries[1]["seq"]
    assert set(entries[0]) == {"seq", "at", "action", "details"}
    assert entries[0]["action"] == "asset.put"


# -- authorization -------------------------------------------------------------------------


def test_private_content_needs_the_callers_elevation(service: Service) -> None:
    secret = put(service, title="diary", body="DIARY-BODY", private=True)
    ref = secret["asset"]
    content_ops: list[dict[str, Any]] = [
        {"op": "read", "ref": ref},
        {"op": "history", "ref": ref},
        {"op": "diff", "ref": ref},
        {"op": "update", "ref": ref, "body": "changed"},
        {"op": "tombstone", "ref": ref},
    ]
    for request in content_ops:
        with pytest.raises(DeniedError, match="sudo") as caught:
            call(service, request)
        assert "DIARY-BODY" not in caught.value.message
    assert call(service, {"op": "list"})["summaries"] == []
    sudo(service, CLI1)
    assert call(service, {"op": "read", "ref": ref}, CLI1)["body"] == "DIARY-BODY"
    assert [s["id"] for s in call(service, {"op": "list"}, CLI1)["summaries"]] == [ref]
    for other in (CLI2, WS_REMOTE):
        with pytest.raises(DeniedError):
            call(service, {"op": "read", "ref": ref}, other)
        assert call(service, {"op": "list"}, other)["summaries"] == []
    updated = call(service, {"op": "update", "ref": ref, "body": "edited"}, CLI1)
    assert updated["asset"] == ref


def test_private_files_need_elevation(service: Service) -> None:
    saved = call(
        service, {"op": "file_put", "name": "p.txt", "data": b64u_encode(b"x"), "private": True}
    )
    with pytest.raises(DeniedError):
        call(service, {"op": "file_get", "ref": saved["asset"]})
    sudo(service)
    assert call(service, {"op": "file_get", "ref": saved["asset"]})["size"] == 1


def test_elevation_expires(service: Service, clock: Clock) -> None:
    secret = put(service, private=True)
    sudo(service, CLI1, minutes=1)
    clock.advance(59)
    call(service, {"op": "read", "ref": secret["asset"]})
    clock.advance(2)
    with pytest.raises(DeniedError):
        call(service, {"op": "read", "ref": secret["asset"]})
    assert call(service, {"op": "status"})["elevated"] is False


def test_sudo_defaults_to_the_configured_minutes_and_checks_the_password(
    service: Service,
) -> None:
    out = call(service, {"op": "sudo", "password": PASSWORD})
    assert out == {"elevated_until_seconds": 300}
    with pytest.raises(DeniedError, match="the password is not correct"):
        call(service, {"op": "sudo", "password": "nope"}, CLI2)
    assert call(service, {"op": "status"}, CLI2)["elevated"] is False
    newest = audit(service, limit=1)[0]
    assert newest["action"] == "sudo.failed"
    assert newest["details"] == {"op": "sudo", "code": "denied", "caller": "cli:2"}


def test_remote_unlock_elevates_only_the_remote_namespace(service: Service) -> None:
    secret = put(service, private=True)
    sudo(service, CLI1)
    call(service, {"op": "lock"})
    call(service, {"op": "unlock", "password": PASSWORD}, WS_REMOTE)
    assert call(service, {"op": "read", "ref": secret["asset"]}, WS_REMOTE)["private"] is True
    with pytest.raises(DeniedError):  # the lock ended cli:1's elevation; unlock did not renew it
        call(service, {"op": "read", "ref": secret["asset"]}, CLI1)


def test_credentials_need_elevation_and_their_value_never_comes_back(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    value = "sk-live-CREDENTIAL-VALUE-123"
    request = {"op": "credential_put", "title": "api key", "secret": value, "tags": ["api"]}
    with pytest.raises(DeniedError, match="elevation") as caught:
        call(service, request)
    assert value not in caught.value.message
    with pytest.raises(DeniedError):
        put(service, kind="credential", body=value)
    sudo(service, CLI1)
    with pytest.raises(DeniedError):
        call(service, request, CLI2)
    responses: list[Any] = []
    saved = call(service, request)
    responses.append(saved)
    ref = saved["asset"]
    responses.append(call(service, {"op": "read", "ref": ref}))
    assert responses[-1]["body"] is None and responses[-1]["secret_hidden"] is True
    changed = call(service, {"op": "update", "ref": ref, "title": "renamed key"})
    responses.append(changed)
    responses.append(call(service, {"op": "history", "ref": ref}))
    responses.append(call(service, {"op": "diff", "ref": ref}))
    responses.append(call(service, {"op": "list", "all_vaults": True}))
    responses.append(call(service, {"op": "status"}))
    responses.append(call(service, {"op": "audit_list", "limit": 1000}))
    with pytest.raises(UsageError) as metadata_error:
        call(service, {**request, "metadata": {"k": value}})
    assert value not in metadata_error.value.message
    dumped = json.dumps(responses)
    assert value not in dumped
    assert value not in caplog.text
    # Without elevation even a rename of the credential is refused.
    with pytest.raises(DeniedError):
        call(service, {"op": "update", "ref": ref, "title": "x"}, CLI2)
    with pytest.raises(DeniedError):
        call(service, {"op": "tombstone", "ref": ref}, CLI2)
    assert value.encode() not in service.settings.store_path.read_bytes()


def test_change_password_needs_elevation(service: Service) -> None:
    request = {"op": "change_password", "old_password": PASSWORD, "new_password": "new secret"}
    with pytest.raises(DeniedError, match="elevation"):
        call(service, request)
    sudo(service, CLI1)
    with pytest.raises(DeniedError):
        call(service, request, CLI2)
    with pytest.raises(DeniedError, match="not correct"):
        call(service, {**request, "old_password": "wrong"})
    assert audit(service, limit=1)[0]["action"] == "change_password.failed"
    assert call(service, request) == {"changed": True}
    call(service, {"op": "lock"})
    with pytest.raises(DeniedError):
        call(service, {"op": "unlock", "password": PASSWORD})
    assert call(service, {"op": "unlock", "password": "new secret"})["unlocked"] is True


# -- desktop status ------------------------------------------------------------------------


def test_desktop_status_shows_counts_only_and_touches_nothing(
    service: Service, clock: Clock
) -> None:
    sudo(service, minutes=20)
    saved = [
        put(service, title="TITLE-ALPHA", body="BODY-ALPHA"),
        put(service, title="TITLE-BETA", private=True),
        call(service, {"op": "card_put", "title": "TITLE-GAMMA", "card_type": "knowledge"}),
    ]
    status = call(service, {"op": "status"})
    vaults = call(service, {"op": "vault_list"})["vaults"]
    assert service.store is not None
    seq = service.store.seq
    elevated_left = service.elevation.seconds_left(CLI1.namespace)
    clock.advance(599)  # one second short of the idle lock
    out = call(service, {"op": "desktop_status"})
    assert out == {
        "initialized": True,
        "unlocked": True,
        "libraries": 2,
        "connections": 0,
        "providers": [],
        "sync_queue": {"pending": 0},
    }
    text = json.dumps(out)
    forbidden = [s["asset"] for s in saved] + [s["revision"] for s in saved]
    forbidden += [s["short_id"] for s in saved] + [v["id"] for v in vaults]
    forbidden += ["TITLE-ALPHA", "TITLE-BETA", "TITLE-GAMMA", "BODY-ALPHA", "personal"]
    forbidden += [str(v) for v in status["identity"].values()]
    for value in forbidden:
        assert value not in text
    assert service.store.seq == seq  # nothing was committed
    assert service.elevation.seconds_left(CLI1.namespace) == elevated_left - 599
    clock.advance(2)  # the desktop probe did not count as activity
    assert service.tick() is True
    assert not service.unlocked


# -- idle lock and stale delivery ----------------------------------------------------------


def test_idle_lock_fires_after_the_configured_time(service: Service, clock: Clock) -> None:
    secret = put(service, private=True)
    sudo(service)
    generation = service.generation
    clock.advance(600)
    assert service.tick() is False  # exactly the limit is not longer than it
    call(service, {"op": "status"})  # polling the state does not count as activity
    clock.advance(1)
    assert service.tick() is True
    call(service, {"op": "unlock", "password": PASSWORD})
    sudo(service)
    generation = service.generation
    clock.advance(600)
    call(service, {"op": "list"})  # any other request counts
    clock.advance(600)
    assert service.tick() is False
    clock.advance(1)
    assert service.tick() is True
    assert service.generation == generation + 1
    assert not service.unlocked
    assert service.tick() is False
    with pytest.raises(LockedError):
        call(service, {"op": "read", "ref": secret["asset"]})
    call(service, {"op": "unlock", "password": PASSWORD})
    with pytest.raises(DeniedError):  # the elevation ended with the lock
        call(service, {"op": "read", "ref": secret["asset"]})


def test_responses_made_before_a_lock_are_not_delivered(service: Service, clock: Clock) -> None:
    saved = put(service, body="PLAINTEXT")
    generation, response = service.handle_stamped(
        parse_request({"op": "read", "ref": saved["asset"]}), CLI1
    )
    assert service.deliver(generation, response) is response
    call(service, {"op": "lock"})
    with pytest.raises(LockedError, match="memories unlock") as caught:
        service.deliver(generation, response)
    assert "PLAINTEXT" not in caught.value.message
    # A lock's own answer is stamped after the lock, so it is delivered.
    call(service, {"op": "unlock", "password": PASSWORD})
    lock_generation, locked = service.handle_stamped(parse_request({"op": "lock"}), CLI1)
    assert service.deliver(lock_generation, locked) == {"locked": True}
    # An idle lock makes earlier responses stale too.
    call(service, {"op": "unlock", "password": PASSWORD})
    generation, response = service.handle_stamped(parse_request({"op": "list"}), CLI1)
    clock.advance(601)
    assert service.tick()
    with pytest.raises(LockedError):
        service.deliver(generation, response)


# -- audit intents -------------------------------------------------------------------------


def test_content_reads_leave_a_read_intent(service: Service) -> None:
    saved = put(service, body="text")
    file = call(service, {"op": "file_put", "name": "f.txt", "data": b64u_encode(b"f")})
    call(service, {"op": "read", "ref": saved["asset"]})
    call(service, {"op": "history", "ref": saved["asset"]})
    call(service, {"op": "diff", "ref": saved["asset"]})
    call(service, {"op": "file_get", "ref": file["asset"]}, CLI2)
    intents = [e for e in audit(service) if e["action"] == "read.intent"]
    assert [e["details"]["op"] for e in intents] == ["file_get", "diff", "history", "read"]
    assert intents[0]["details"] == {"op": "file_get", "asset": file["asset"], "caller": "cli:2"}
    assert intents[3]["details"] == {
        "op": "read",
        "asset": saved["asset"],
        "caller": "cli:1",
        "revision": saved["revision"],
    }
    # Listings are not content reads.
    before = len(audit(service, limit=1000))
    call(service, {"op": "list"})
    assert len(audit(service, limit=1000)) == before + 0


class _FailingCommit:
    """A connection whose COMMIT fails like a device error."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> object:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_read_whose_intent_cannot_be_written_is_denied(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    saved = put(service, title="TITLE-R", body="BODY-R")
    file = call(service, {"op": "file_put", "name": "f.txt", "data": b64u_encode(b"FILE-R")})
    store = service.store
    assert store is not None
    real = store._conn
    store._conn = _FailingCommit(real)  # type: ignore[assignment]
    try:
        for request in (
            {"op": "read", "ref": saved["asset"]},
            {"op": "history", "ref": saved["asset"]},
            {"op": "diff", "ref": saved["asset"]},
            {"op": "file_get", "ref": file["asset"]},
        ):
            result: dict[str, Any] | None = None
            with pytest.raises(DeniedError, match="delivery denied") as caught:
                result = call(service, request)
            assert result is None
            for value in ("TITLE-R", "BODY-R", "RklMRS1S", "FILE-R"):
                assert value not in caught.value.message
        # A failed write cannot record its failure either: only the error type is logged.
        with pytest.raises(MemoriesError, match="nothing was changed"):
            put(service, title="TITLE-W", body="BODY-W")
        assert "could not record a failed put: DeniedError" in caplog.text
        assert "BODY-W" not in caplog.text and "TITLE-W" not in caplog.text
    finally:
        store._conn = real
    assert all(e["action"] != "read.intent" for e in audit(service))
    assert len(call(service, {"op": "list"})["summaries"]) == 2


def test_failed_writes_are_recorded_without_content(service: Service) -> None:
    with pytest.raises(UsageError):
        call(service, {"op": "card_put", "title": "TITLE-F", "card_type": "no-such-type"})
    with pytest.raises(UsageError):
        put(service, title="  ", body="BODY-F")
    with pytest.raises(NotFoundError):
        call(service, {"op": "update", "ref": "ffffffff", "body": "BODY-F"})
    entries = audit(service, limit=3)
    assert [e["action"] for e in entries] == ["update.failed", "put.failed", "card_put.failed"]
    assert entries[0]["details"] == {"op": "update", "code": "not_found", "caller": "cli:1"}
    assert entries[2]["details"] == {"op": "card_put", "code": "invalid_input", "caller": "cli:1"}
    assert "TITLE-F" not in json.dumps(entries) and "BODY-F" not in json.dumps(entries)
    # Failed reads are not write failures.
    with pytest.raises(NotFoundError):
        call(service, {"op": "read", "ref": "ffffffff"})
    assert audit(service, limit=1)[0]["action"] == "update.failed"


def test_concurrent_callers_are_serialized_by_the_service_lock(service: Service) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(8):
                saved = put(service, title=f"w{worker}-{n}", body=f"body {worker} {n}")
                view = call(service, {"op": "read", "ref": saved["asset"]})
                assert view["body"] == f"body {worker} {n}"
                call(service, {"op": "desktop_status"})
        except BaseException as exc:  # surfaced below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(call(service, {"op": "list"})["summaries"]) == 32
    assert service.store is not None
    assert service.store.verify()["checkpoints"] == service.store.seq
