"""MCP grants in the service: minting, listing, revoking, and what every grant caller meets."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memories.config import Settings
from memories.errors import (
    UNAUTHORIZED_MESSAGE,
    ConflictError,
    DeniedError,
    LockedError,
    NotFoundError,
    UnauthorizedError,
    UsageError,
)
from memories.service import Caller, Grant, Service, parse_request
from tests.memories.service.support import CLI1, CLI2, FAST, PASSWORD, Clock, call, put, sudo

CANARY = "zq-CANARY-7c1e"


class WallClock:
    """Wall-clock seconds since the epoch that move only when told to."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def make_grant_service(
    settings: Settings, clock: Clock, wall: WallClock
) -> Iterator[Callable[[], Service]]:
    made: list[Service] = []

    def make() -> Service:
        service = Service(settings, kdf_cost=FAST, clock=clock, wall_clock=wall)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def gs(make_grant_service: Callable[[], Service]) -> Service:
    """An initialized, unlocked service whose CLI1 namespace is elevated."""
    service = make_grant_service()
    call(service, {"op": "init", "password": PASSWORD, "device_name": "test device"})
    sudo(service)
    return service


def create(service: Service, name: str = "agent", **fields: Any) -> dict[str, Any]:
    fields.setdefault("scope", "read")
    return call(service, {"op": "grant_create", "name": name, **fields})


def caller_for(service: Service, token: str) -> Caller:
    """The caller the daemon binds to a connection that authenticated with ``token``."""
    grant = service.authenticate_grant(token)
    return Caller(f"mcp:{grant.id}", grant=grant)


# -- minting, listing, revoking ------------------------------------------------------------------


def test_create_returns_the_token_once_and_the_list_never_shows_it(gs: Service) -> None:
    made = create(gs, "claude", scope="read_write")
    token, view = made["token"], made["grant"]
    assert set(made) == {"grant", "token"}
    assert token.startswith("mem_grant_")
    assert len(base64.urlsafe_b64decode(token.removeprefix("mem_grant_") + "=")) == 32
    assert set(view) == {"id", "name", "scope", "vaults", "created_at", "expires_at", "revoked_at"}
    personal = next(v for v in call(gs, {"op": "vault_list"})["vaults"] if v["personal"])
    assert view["name"] == "claude"
    assert view["scope"] == "read_write"
    assert view["vaults"] == [personal["id"]]
    assert view["expires_at"] is None
    assert view["revoked_at"] is None
    listed = call(gs, {"op": "grant_list"})
    assert listed == {"grants": [view]}
    assert token not in repr(listed)
    assert create(gs, "other")["token"] != token


def test_the_store_keeps_a_hash_of_the_token_never_the_token(
    gs: Service, settings: Settings
) -> None:
    tokens = [create(gs, f"agent {i}")["token"] for i in range(3)]
    audit = call(gs, {"op": "audit_list", "limit": 20})["entries"]
    assert [e["action"] for e in audit[:3]] == ["grant.create"] * 3
    assert all(set(e["details"]) == {"grant", "caller"} for e in audit[:3])
    gs.close()
    home = settings.store_path.parent
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p == settings.store_path for p in files)
    for path in files:
        data = path.read_bytes()
        for token in tokens:
            assert token.encode() not in data, path
            assert token.removeprefix("mem_grant_").encode() not in data, path


def test_creating_a_grant_needs_elevation(gs: Service) -> None:
    with pytest.raises(DeniedError, match="needs elevation"):
        call(gs, {"op": "grant_create", "name": "x", "scope": "read"}, CLI2)
    # Listing and revoking show no secret and only ever take access away.
    assert call(gs, {"op": "grant_list"}, CLI2) == {"grants": []}


def test_grants_name_vaults_by_name_or_id_and_default_to_the_personal_vault(gs: Service) -> None:
    work = call(gs, {"op": "vault_create", "name": "work"})
    vaults = {v["name"]: v["id"] for v in call(gs, {"op": "vault_list"})["vaults"]}
    both = create(gs, "both", vaults=["personal", work["id"][:8], "work"])["grant"]
    assert both["vaults"] == sorted({vaults["personal"], work["id"]})
    with pytest.raises(NotFoundError, match="no vault has that name"):
        create(gs, "nowhere", vaults=["no such vault"])
    assert [g["name"] for g in call(gs, {"op": "grant_list"})["grants"]] == ["both"]


def test_names_are_unique_among_live_grants(gs: Service, wall: WallClock) -> None:
    create(gs, "agent")
    with pytest.raises(ConflictError, match="already has that name"):
        create(gs, "agent", scope="allow_all")
    call(gs, {"op": "grant_revoke", "grant": "agent"})
    create(gs, "agent", expires_seconds=60)  # the revoked one no longer holds the name
    wall.advance(61)
    again = create(gs, "agent")["grant"]  # nor does the expired one
    names = [g["name"] for g in call(gs, {"op": "grant_list"})["grants"]]
    assert names == ["agent", "agent", "agent"]
    assert call(gs, {"op": "grant_revoke", "grant": "agent"})["grant"]["id"] == again["id"]


def test_expiry_is_recorded_as_a_calendar_time(gs: Service) -> None:
    view = create(gs, "brief", expires_seconds=90 * 60)["grant"]
    assert view["created_at"] == "2027-01-15T08:00:00.000Z"
    assert view["expires_at"] == "2027-01-15T09:30:00.000Z"


def test_revoke_by_name_or_id_prefix_and_twice_is_harmless(gs: Service, wall: WallClock) -> None:
    first = create(gs, "first")["grant"]
    second = create(gs, "second")["grant"]
    wall.advance(5)
    revoked = call(gs, {"op": "grant_revoke", "grant": "first"})["grant"]
    assert revoked["id"] == first["id"]
    assert revoked["revoked_at"] == "2027-01-15T08:00:05.000Z"
    by_id = call(gs, {"op": "grant_revoke", "grant": second["id"][:8]})["grant"]
    assert by_id["id"] == second["id"]
    wall.advance(5)
    assert call(gs, {"op": "grant_revoke", "grant": "first"})["grant"] == revoked
    for ref in ("nobody", "abcdef0123", "ab"):
        with pytest.raises(NotFoundError, match="no grant has that name or id"):
            call(gs, {"op": "grant_revoke", "grant": ref})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": ""}, "name"),
        ({"name": "-" + CANARY}, "a grant name is 1 to 64"),
        ({"name": CANARY + "/" + CANARY}, "a grant name is 1 to 64"),
        ({"name": "x" * 65}, "name"),
        ({"name": 7}, "name"),
        ({"scope": "admin " + CANARY}, "scope"),
        ({"scope": None}, "scope"),
        ({"expires_seconds": 0}, "expires_seconds"),
        ({"expires_seconds": -5}, "expires_seconds"),
        ({"expires_seconds": 10**12}, "expires_seconds"),
        ({"expires_seconds": True}, "expires_seconds"),
        ({"expires_seconds": "60"}, "expires_seconds"),
        ({"vaults": "personal"}, "vaults"),
        ({"vaults": [""]}, "vaults"),
        ({"vaults": ["personal"] * 65}, "vaults"),
        ({"token": CANARY}, "token"),
    ],
)
def test_bad_grant_input_is_refused_without_echoing_it(
    gs: Service, fields: dict[str, Any], expected: str
) -> None:
    request = {"op": "grant_create", "name": "agent", "scope": "read", **fields}
    with pytest.raises(UsageError) as raised:
        call(gs, request)
    assert expected in raised.value.message
    assert CANARY not in raised.value.message
    assert call(gs, {"op": "grant_list"}) == {"grants": []}


def test_grant_records_do_not_trouble_verification(gs: Service) -> None:
    create(gs, "agent")
    call(gs, {"op": "grant_revoke", "grant": "agent"})
    report = call(gs, {"op": "verify"})
    assert report["ok"] is True, report["problems"]


# -- authentication -------------------------------------------------------------------------------


def test_a_token_authenticates_as_its_grant(gs: Service) -> None:
    work = call(gs, {"op": "vault_create", "name": "work"})
    made = create(gs, "claude", vaults=["work"], scope="read_write_delete")
    grant = gs.authenticate_grant(made["token"])
    assert grant == Grant(
        name="claude",
        scope="read_write_delete",
        vaults=frozenset({work["id"]}),
        id=made["grant"]["id"],
    )


def test_wrong_revoked_and_expired_tokens_all_get_the_same_answer(
    gs: Service, wall: WallClock
) -> None:
    revoked = create(gs, "revoked")["token"]
    call(gs, {"op": "grant_revoke", "grant": "revoked"})
    expiring = create(gs, "expiring", expires_seconds=10)["token"]
    assert gs.authenticate_grant(expiring).name == "expiring"
    wall.advance(10)
    live = create(gs, "live")["token"]
    wrong = [
        "",
        "mem_grant_",
        live[:-1],
        live + "A",
        live.upper(),
        "mem_grant_" + "A" * 43,
        revoked,
        expiring,
    ]
    for token in wrong:
        with pytest.raises(UnauthorizedError) as raised:
            gs.authenticate_grant(token)
        assert raised.value.message == UNAUTHORIZED_MESSAGE
        assert raised.value.code == "unauthorized"
        assert raised.value.exit_code == 3
    assert gs.authenticate_grant(live).name == "live"


def test_authentication_needs_the_store_unlocked(gs: Service) -> None:
    token = create(gs, "agent")["token"]
    call(gs, {"op": "lock"})
    with pytest.raises(LockedError):
        gs.authenticate_grant(token)
    call(gs, {"op": "unlock", "password": PASSWORD})
    assert gs.authenticate_grant(token).name == "agent"  # grants outlive a lock


def test_without_a_store_no_token_authenticates(make_grant_service: Callable[[], Service]) -> None:
    with pytest.raises(UnauthorizedError):
        make_grant_service().authenticate_grant("mem_grant_" + "A" * 43)


# -- every request of a grant caller ---------------------------------------------------------------


def test_revocation_and_expiry_apply_to_the_next_request(gs: Service, wall: WallClock) -> None:
    put(gs, title="shared")
    reader = caller_for(gs, create(gs, "reader")["token"])
    short = caller_for(gs, create(gs, "short", expires_seconds=30)["token"])
    assert len(call(gs, {"op": "list"}, reader)["summaries"]) == 1
    assert len(call(gs, {"op": "list"}, short)["summaries"]) == 1
    call(gs, {"op": "grant_revoke", "grant": "reader"})
    with pytest.raises(UnauthorizedError):
        call(gs, {"op": "list"}, reader)
    wall.advance(30)
    with pytest.raises(UnauthorizedError):
        call(gs, {"op": "list"}, short)


def test_the_stored_grant_decides_not_the_callers_copy(gs: Service) -> None:
    made = create(gs, "reader", scope="read")
    forged = Caller(
        f"mcp:{made['grant']['id']}",
        grant=Grant(name="reader", scope="allow_all", vaults=None, id=made["grant"]["id"]),
    )
    with pytest.raises(DeniedError, match="does not allow write"):
        call(gs, {"op": "put", "title": "t"}, forged)
    unknown = Caller("mcp:x", grant=Grant(name="x", scope="allow_all", id="0" * 32))
    with pytest.raises(UnauthorizedError):
        call(gs, {"op": "list"}, unknown)


def test_a_grant_caller_gets_locked_while_the_store_is_locked(gs: Service) -> None:
    reader = caller_for(gs, create(gs, "reader")["token"])
    call(gs, {"op": "lock"})
    with pytest.raises(LockedError):
        call(gs, {"op": "list"}, reader)
    call(gs, {"op": "unlock", "password": PASSWORD})
    assert call(gs, {"op": "list"}, reader) == {"summaries": []}


def test_write_and_delete_need_the_scope_for_them(gs: Service) -> None:
    saved = put(gs, title="kept")
    reader = caller_for(gs, create(gs, "reader", scope="read")["token"])
    writer = caller_for(gs, create(gs, "writer", scope="read_write")["token"])
    deleter = caller_for(gs, create(gs, "deleter", scope="read_write_delete")["token"])
    with pytest.raises(DeniedError, match="does not allow write"):
        call(gs, {"op": "put", "title": "t"}, reader)
    call(gs, {"op": "put", "title": "by the writer"}, writer)
    with pytest.raises(DeniedError, match="does not allow delete"):
        call(gs, {"op": "tombstone", "ref": saved["asset"]}, writer)
    call(gs, {"op": "tombstone", "ref": saved["asset"]}, deleter)
    titles = [s["title"] for s in call(gs, {"op": "list"}, reader)["summaries"]]
    assert titles == ["by the writer"]


def test_a_grant_never_edits_or_deletes_what_references_a_secret(gs: Service) -> None:
    note = put(gs, title="deploy", body=f"export TOKEN={CANARY}")
    call(gs, {"op": "protect_secret", "ref": note["asset"], "label": "tok", "secret": CANARY})
    # The user takes the marker out of the body; the secrets map stays, so an agent that put
    # the marker back somewhere else would choose where the secret goes.
    call(gs, {"op": "update", "ref": note["asset"], "body": "no marker here"})
    card = call(
        gs,
        {"op": "protected_card", "title": "gh", "label": "gh", "kind": "token", "secret": CANARY},
    )
    agent = caller_for(gs, create(gs, "agent", scope="read_write_delete")["token"])
    for ref in (note["asset"], card["asset"]):
        head = call(gs, {"op": "read", "ref": ref})["revision"]
        for request in (
            {"op": "update", "ref": ref, "body": "send {{secret:tok}} to evil.example"},
            {"op": "tombstone", "ref": ref},
            {"op": "resolve", "ref": ref, "parents": [head], "title": "merged"},
        ):
            with pytest.raises(DeniedError, match="secret references"):
                call(gs, request, agent)
        assert call(gs, {"op": "read", "ref": ref})["revision"] == head
    plain = put(gs, title="plain")
    call(gs, {"op": "update", "ref": plain["asset"], "body": "edited by the agent"}, agent)
    call(gs, {"op": "update", "ref": note["asset"], "body": "the user still edits"})


def test_a_vault_outside_the_grant_answers_like_one_that_does_not_exist(gs: Service) -> None:
    call(gs, {"op": "vault_create", "name": "work"})
    secret = put(gs, vault="work", title="work only")
    mine = put(gs, title="personal")
    agent = caller_for(gs, create(gs, "agent", scope="allow_all")["token"])

    def error(data: dict[str, Any], caller: Caller) -> tuple[type[Exception], str]:
        with pytest.raises(NotFoundError) as raised:
            call(gs, data, caller)
        return type(raised.value), raised.value.message

    for op in ("list", "conflicts", "graph", "card_types", "search"):
        extra = {"query": "work"} if op == "search" else {}
        outside = error({"op": op, "vault": "work", **extra}, agent)
        assert outside == error({"op": op, "vault": "no such vault", **extra}, agent)
    missing = "f" * 32
    for op in ("read", "history", "diff", "file_get"):
        assert error({"op": op, "ref": secret["asset"]}, agent) == error(
            {"op": op, "ref": missing}, agent
        )
    for data in (
        {"op": "update", "ref": secret["asset"], "title": "x"},
        {"op": "tombstone", "ref": secret["asset"]},
        {"op": "link", "source": mine["asset"], "target": secret["asset"]},
        {"op": "put", "vault": "work", "title": "x"},
    ):
        error(data, agent)
    assert [v["name"] for v in call(gs, {"op": "vault_list"}, agent)["vaults"]] == ["personal"]
    everywhere = call(gs, {"op": "list", "all_vaults": True}, agent)["summaries"]
    assert [s["title"] for s in everywhere] == ["personal"]
    # The owner, of course, still sees both.
    titles = {s["title"] for s in call(gs, {"op": "list", "all_vaults": True})["summaries"]}
    assert {"personal", "work only"} <= titles
    assert call(gs, {"op": "read", "ref": secret["asset"]})["title"] == "work only"


def test_an_answer_is_withheld_when_the_grant_is_revoked_before_delivery(gs: Service) -> None:
    put(gs, title="in flight")
    reader = caller_for(gs, create(gs, "reader")["token"])
    request = parse_request({"op": "list"})
    generation, response = gs.handle_stamped(request, reader)
    assert len(response["summaries"]) == 1
    assert gs.deliver(generation, response, reader) is response
    generation, response = gs.handle_stamped(request, reader)
    call(gs, {"op": "grant_revoke", "grant": "reader"})
    with pytest.raises(UnauthorizedError):
        gs.deliver(generation, response, reader)
    # A local caller's answer is not held back by someone else's grant.
    local_generation, local = gs.handle_stamped(request, CLI1)
    assert gs.deliver(local_generation, local, CLI1) is local


def test_an_answer_is_withheld_when_the_store_locks_before_delivery(gs: Service) -> None:
    reader = caller_for(gs, create(gs, "reader")["token"])
    generation, response = gs.handle_stamped(parse_request({"op": "list"}), reader)
    call(gs, {"op": "lock"})
    call(gs, {"op": "unlock", "password": PASSWORD})  # unlocked again: still a later generation
    with pytest.raises(LockedError):
        gs.deliver(generation, response, reader)


def test_an_answer_is_withheld_when_the_grant_expires_before_delivery(
    gs: Service, wall: WallClock
) -> None:
    reader = caller_for(gs, create(gs, "reader", expires_seconds=5)["token"])
    generation, response = gs.handle_stamped(parse_request({"op": "list"}), reader)
    wall.advance(5)
    with pytest.raises(UnauthorizedError):
        gs.deliver(generation, response, reader)


def test_grant_requests_are_local_only(gs: Service) -> None:
    remote = dataclasses.replace(CLI1, namespace="ws:remote", remote=True)
    for data in (
        {"op": "grant_create", "name": "x", "scope": "read"},
        {"op": "grant_list"},
        {"op": "grant_revoke", "grant": "x"},
    ):
        with pytest.raises(DeniedError, match="not available over a remote connection"):
            call(gs, data, remote)
