"""Every request type against every grant scope: what MCP may never send stays denied.

The matrix is built from the request union itself, so a request added later is covered (and
:func:`sample` must learn to build it, or the first test says which one it cannot).
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from memories.errors import DeniedError, MemoriesError
from memories.service import REQUEST_TYPES, Caller, Service, op_name, parse_request
from memories.service.grants import GRANT_SCOPES, SCOPE_CAPABILITIES
from memories.service.requests import RequestModel
from tests.memories.service.support import PASSWORD, call, sudo

#: Values for fields whose type alone does not say what parses.
_BY_NAME: dict[str, object] = {
    "fields": [{"name": "a", "type": "string"}],
    "data": "aGk",
    "sha256": "sha256:" + "0" * 64,
    "run": "0" * 32,
    "env": {"NAME": "abcd1234"},
    "environment": {"NAME": "abcd1234"},
    "argv": ["true"],
    "program": "/usr/bin/true",
    "cwd": "/",
}


def _value(name: str, annotation: object) -> object:
    if name in _BY_NAME:
        return _BY_NAME[name]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _value(name, typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if annotation is int:
        return 0
    if annotation is bool:
        return False
    if origin is list:
        return [_value(name, typing.get_args(annotation)[0])]
    if origin is dict:
        return {"NAME": "abcd1234"}
    if annotation is SecretStr:
        return "a secret value"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _required(annotation)
    return "abcd1234"


def _required(model: type[BaseModel]) -> dict[str, Any]:
    return {
        name: _value(name, field.annotation)
        for name, field in model.model_fields.items()
        if name != "op" and field.is_required()
    }


def sample(model: type[RequestModel]) -> dict[str, Any]:
    """A request of type ``model`` with its required fields filled in with values that parse."""
    return {"op": op_name(model), **_required(model)}


NEVER_OVER_MCP = [m for m in REQUEST_TYPES if m.NEEDS.mcp is None]
OVER_MCP = [m for m in REQUEST_TYPES if m.NEEDS.mcp is not None]


@pytest.fixture
def callers(service: Service) -> dict[str, Caller]:
    """A stored grant of every scope, as the daemon binds it to an authenticated connection."""
    sudo(service)
    made = {}
    for scope in GRANT_SCOPES:
        token = call(service, {"op": "grant_create", "name": scope, "scope": scope})["token"]
        grant = service.authenticate_grant(token)
        made[scope] = Caller(f"mcp:{grant.id}", grant=grant)
    return made


def test_every_request_type_has_a_sample_that_parses() -> None:
    for model in REQUEST_TYPES:
        assert type(parse_request(sample(model))) is model, op_name(model)
    assert {"grant_create", "grant_list", "grant_revoke"} <= {op_name(m) for m in NEVER_OVER_MCP}


@pytest.mark.parametrize("model", NEVER_OVER_MCP, ids=op_name)
def test_requests_mcp_may_never_send_are_denied_whatever_the_scope(
    service: Service, callers: dict[str, Caller], model: type[RequestModel]
) -> None:
    grants_before = call(service, {"op": "grant_list"})
    for scope, caller in callers.items():
        with pytest.raises(DeniedError, match="is not available to MCP clients"):
            call(service, sample(model), caller)
        assert service.unlocked, scope  # `lock` from a grant caller locked nothing
    assert call(service, {"op": "grant_list"}) == grants_before
    call(service, {"op": "lock"})
    for caller in callers.values():  # the same answer while locked: no lock-state oracle
        with pytest.raises(MemoriesError) as raised:
            call(service, sample(model), caller)
        assert raised.value.code in ("denied", "locked")
    call(service, {"op": "unlock", "password": PASSWORD})


@pytest.mark.parametrize("model", OVER_MCP, ids=op_name)
def test_requests_mcp_may_send_need_the_capability_their_scope_gives(
    service: Service, callers: dict[str, Caller], model: type[RequestModel]
) -> None:
    needed = model.NEEDS.mcp
    assert needed is not None
    for scope, caller in callers.items():
        try:
            call(service, sample(model), caller)
        except DeniedError as exc:
            refused = "does not allow" in exc.message
        except MemoriesError:
            refused = False  # allowed through, then the sample named nothing that exists
        else:
            refused = False
        assert refused == (needed not in SCOPE_CAPABILITIES[scope]), (scope, op_name(model))
