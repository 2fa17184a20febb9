"""Authorization as data: every request declares its needs, and one authorizer reads them."""

from __future__ import annotations

from typing import Any

import pytest

from memories.errors import DeniedError, LockedError, NotFoundError
from memories.service import WS_REMOTE, Caller, Grant, Service, authorize, parse_request
from memories.service.access import AssetFacts
from memories.service.requests import REQUEST_TYPES, Needs, op_name
from tests.memories.service.support import CLI1, call, put, sudo

MCP_READ = Caller("mcp:reader", grant=Grant(name="reader", scope="read"))
MCP_WRITE = Caller("mcp:writer", grant=Grant(name="writer", scope="read_write"))
MCP_ALL = Caller("mcp:all", grant=Grant(name="all", scope="allow_all"))


class Directory:
    """The vault facts the authorizer asks for, as plain data."""

    def __init__(self, assets: dict[str, AssetFacts], roles: dict[str, str]) -> None:
        self.assets = assets
        self.roles = roles

    def vault_role(self, ref: str | None) -> tuple[str, str]:
        vault = ref or "personal"
        if vault not in self.roles:
            raise NotFoundError("no vault has that name")
        return vault, self.roles[vault]

    def asset_facts(self, ref: str) -> AssetFacts:
        return self.assets[ref]


def request(data: dict[str, Any]) -> Any:
    return parse_request(data)


def test_every_request_type_declares_its_needs_in_its_own_body() -> None:
    for model in REQUEST_TYPES:
        assert "NEEDS" in model.__dict__, f"{op_name(model)} declares no NEEDS"
        needs = model.__dict__["NEEDS"]
        assert isinstance(needs, Needs)
        for name in needs.subjects:
            assert name in model.model_fields, f"{op_name(model)}: no field {name}"
        assert "RESPONSE" in model.__dict__, f"{op_name(model)} documents no RESPONSE"


def test_ops_that_must_never_reach_mcp_declare_no_capability() -> None:
    never = {
        "init",
        "unlock",
        "lock",
        "sudo",
        "change_password",
        "status",
        "desktop_status",
        "credential_put",
        "audit_list",
        "vault_create",
    }
    for model in REQUEST_TYPES:
        if op_name(model) in never:
            assert model.NEEDS.mcp is None, op_name(model)


def test_the_channel_is_checked_before_the_lock_state() -> None:
    # An MCP client learns nothing about the lock state from an op it may never send.
    with pytest.raises(DeniedError, match="not available to MCP clients"):
        authorize(request({"op": "desktop_status"}), MCP_ALL, state="locked", elevated=False)
    with pytest.raises(LockedError):
        authorize(request({"op": "list"}), MCP_READ, state="locked", elevated=False)


def test_a_grant_allows_only_the_capabilities_of_its_scope() -> None:
    directory = Directory({}, {"personal": "owner"})
    put_req = request({"op": "put", "title": "t"})
    with pytest.raises(DeniedError, match="does not allow write"):
        authorize(put_req, MCP_READ, state="unlocked", elevated=False, directory=directory)
    authorize(put_req, MCP_WRITE, state="unlocked", elevated=False, directory=directory)
    tomb = request({"op": "tombstone", "ref": "abcd"})
    with pytest.raises(DeniedError, match="does not allow delete"):
        authorize(tomb, MCP_WRITE, state="unlocked", elevated=False, directory=directory)


def test_a_grant_covers_only_its_vaults() -> None:
    directory = Directory(
        {"abcd": AssetFacts(vault_id="work", kind="memory", private=False)},
        {"personal": "owner", "work": "owner"},
    )
    only_personal = Caller(
        "mcp:p", grant=Grant(name="p", scope="read", vaults=frozenset({"personal"}))
    )
    authorize(
        request({"op": "list"}),
        only_personal,
        state="unlocked",
        elevated=False,
        directory=directory,
    )
    for data in ({"op": "list", "vault": "work"}, {"op": "read", "ref": "abcd"}):
        # The same answer as for a vault or memory that does not exist: no existence oracle.
        with pytest.raises(NotFoundError, match=r"^no (vault has that name|memory has that id)"):
            authorize(
                request(data), only_personal, state="unlocked", elevated=False, directory=directory
            )


def test_the_vault_role_must_reach_the_declared_one() -> None:
    directory = Directory({}, {"personal": "reader"})
    authorize(request({"op": "list"}), CLI1, state="unlocked", elevated=False, directory=directory)
    with pytest.raises(DeniedError, match="needs editor"):
        authorize(
            request({"op": "put", "title": "t"}),
            CLI1,
            state="unlocked",
            elevated=False,
            directory=directory,
        )


def test_subjects_carry_the_elevation_rule_to_the_asset() -> None:
    directory = Directory(
        {
            "aaaa": AssetFacts(vault_id="personal", kind="memory", private=True),
            "bbbb": AssetFacts(vault_id="personal", kind="credential", private=False),
        },
        {"personal": "owner"},
    )
    with pytest.raises(DeniedError, match="private"):
        authorize(
            request({"op": "read", "ref": "aaaa"}),
            CLI1,
            state="unlocked",
            elevated=False,
            directory=directory,
        )
    # Reading a credential's (hidden) view needs no elevation; changing it does.
    authorize(
        request({"op": "read", "ref": "bbbb"}),
        CLI1,
        state="unlocked",
        elevated=False,
        directory=directory,
    )
    with pytest.raises(DeniedError, match="credential"):
        authorize(
            request({"op": "update", "ref": "bbbb", "title": "x"}),
            CLI1,
            state="unlocked",
            elevated=False,
            directory=directory,
        )
    authorize(
        request({"op": "read", "ref": "aaaa"}),
        CLI1,
        state="unlocked",
        elevated=True,
        directory=directory,
    )


def test_remote_transports_cannot_create_a_store() -> None:
    with pytest.raises(DeniedError, match="remote"):
        authorize(
            request({"op": "init", "password": "p"}), WS_REMOTE, state="absent", elevated=False
        )


def test_an_mcp_caller_is_held_to_its_grant_by_the_real_service(service: Service) -> None:
    saved = put(service, title="plain note")
    secret = put(service, title="diary", private=True)
    assert call(service, {"op": "read", "ref": saved["asset"]}, MCP_READ)["title"] == "plain note"
    with pytest.raises(DeniedError):
        call(service, {"op": "put", "title": "from mcp"}, MCP_READ)
    with pytest.raises(DeniedError, match="private"):
        call(service, {"op": "read", "ref": secret["asset"]}, MCP_ALL)
    sudo(service)  # a local elevation never reaches an MCP namespace
    with pytest.raises(DeniedError, match="private"):
        call(service, {"op": "read", "ref": secret["asset"]}, MCP_ALL)
    with pytest.raises(DeniedError, match="not available to MCP"):
        call(service, {"op": "credential_put", "title": "t", "secret": "s"}, MCP_ALL)
    written = call(service, {"op": "put", "title": "from mcp"}, MCP_WRITE)
    assert written["asset"]
