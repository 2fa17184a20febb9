"""The command line's typed requests: how they go on the wire and how a bad one is reported."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from memories.cli.common import usage_error, wire_request
from memories.service.requests import (
    InitRequest,
    KdfSettings,
    ListRequest,
    PutRequest,
    RequestModel,
    RotateKeyRequest,
    UnlockRequest,
    UpdateRequest,
    parse_request,
)
from tests.memories.cli.conftest import Memories

SECRET = "correct horse battery staple"

ROUND_TRIPS: list[RequestModel] = [
    PutRequest(op="put", title="Deploys", body="need the VPN", tags=["ops"], private=True),
    ListRequest(op="list"),
    InitRequest(
        op="init",
        password=SecretStr(SECRET),
        user_name="Ada",
        kdf=KdfSettings(time_cost=1, memory_kib=19456, parallelism=1),
    ),
    UnlockRequest(op="unlock", password=SecretStr(SECRET), accept_rollback=True),
    RotateKeyRequest(op="rotate_key", password=SecretStr(SECRET), new_password=SecretStr("n")),
]


@pytest.mark.parametrize("request_model", ROUND_TRIPS, ids=lambda r: type(r).__name__)
def test_wire_request_parses_back_to_an_equal_model(request_model: RequestModel) -> None:
    assert parse_request(wire_request(request_model)) == request_model


def test_wire_request_carries_secret_values_not_masks() -> None:
    wire = wire_request(
        RotateKeyRequest(op="rotate_key", password=SecretStr(SECRET), new_password=SecretStr("n"))
    )
    assert wire == {"op": "rotate_key", "password": SECRET, "new_password": "n"}


def test_wire_request_leaves_out_fields_at_their_defaults() -> None:
    assert wire_request(ListRequest(op="list")) == {"op": "list"}
    assert wire_request(UnlockRequest(op="unlock", password=SecretStr("p"))) == {
        "op": "unlock",
        "password": "p",
    }
    # A value that differs from its default is sent, even a false one.
    update = UpdateRequest(op="update", ref="1a2b3c4d", private=False)
    assert wire_request(update) == {"op": "update", "ref": "1a2b3c4d", "private": False}


def test_a_model_that_cannot_be_built_is_a_usage_error_naming_the_op_not_the_value() -> None:
    title = "confidential-" + "x" * 2000
    with pytest.raises(ValidationError) as caught:
        PutRequest(op="put", title=title, body="b")
    error = usage_error(caught.value)
    assert error.exit_code == 2
    assert error.message == "put: field 'title' is too long (at most 1000 characters)"
    assert "confidential" not in error.message


def test_a_request_the_options_cannot_make_exits_2_before_reaching_the_daemon(
    memories: Memories,
) -> None:
    title = "confidential-" + "x" * 2000
    result = memories("put", "some text", "--title", title, "--json")
    assert result.code == 2, result.stderr
    error = result.json()["error"]
    assert error == {
        "code": "invalid_input",
        "message": "put: field 'title' is too long (at most 1000 characters)",
    }
    assert "confidential" not in result.stdout + result.stderr
    assert "started the memories daemon" not in result.stderr
