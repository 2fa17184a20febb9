"""Parsing requests: strict types, closed field sets, and errors that never repeat a value."""

from __future__ import annotations

from typing import Any

import pytest

from memories.errors import UsageError
from memories.service.requests import (
    REQUEST_TYPES,
    CardTypeDefineRequest,
    CredentialPutRequest,
    FilePutRequest,
    InitRequest,
    PutRequest,
    ReadRequest,
    SudoRequest,
    op_name,
    op_names,
    parse_request,
)

SECRET = "hunter2-TOPSECRET"


def refused(data: object) -> str:
    with pytest.raises(UsageError) as caught:
        parse_request(data)
    message = caught.value.message
    assert SECRET not in message
    return message


def test_every_op_has_a_model_and_the_contract_names() -> None:
    # Ops are only ever added: a renamed or dropped op breaks every client that sends it.
    assert set(op_names()) >= {
        "init", "unlock", "lock", "sudo", "change_password", "status", "desktop_status",
        "vault_create", "vault_list", "put", "read", "update", "tombstone", "resolve",
        "history", "diff", "list", "conflicts", "card_put", "card_types", "card_type_define",
        "link", "unlink", "graph", "file_put", "file_get", "credential_put", "audit_list",
        "rotate_key", "verify",
    }  # fmt: skip
    assert len(op_names()) == len(REQUEST_TYPES)


@pytest.mark.parametrize("model", REQUEST_TYPES, ids=op_name)
def test_each_op_parses_to_its_model_with_only_required_fields(model: Any) -> None:
    op = op_name(model)
    required = {
        name: _KIND_BY_OP.get(op, "token") if name == "kind" else _sample(name)
        for name, field in model.model_fields.items()
        if field.is_required() and name != "op"
    }
    parsed = parse_request({"op": op, **required})
    assert type(parsed) is model


# Ops whose ``kind`` is a closed choice of their own rather than an asset kind.
_KIND_BY_OP = {"credential_generate": "ssh", "sync_add": "folder"}


def _sample(name: str) -> object:
    if name == "fields":
        return [{"name": "a", "type": "string"}]
    if name == "data":
        return "aGk"
    if name in ("size", "offset"):
        return 0
    if name == "sha256":
        return "sha256:" + "0" * 64
    if name == "env":
        return {"NAME": "abcd1234"}
    if name == "run":
        return "0" * 32
    if name == "scope":
        return "read"
    if name == "role":
        return "reader"
    if name == "argv":
        return ["gh", "pr", "list"]
    if name == "environment":
        return {"PATH": "/usr/bin"}
    if name in ("program", "cwd", "channel"):
        return "/usr/bin/gh"
    if name == "items":
        return [{"title": "t"}]
    if name == "keep":
        return "local"
    return "abcd1234"


def test_a_full_put_keeps_every_field() -> None:
    parsed = parse_request(
        {
            "op": "put",
            "vault": "work",
            "kind": "card",
            "title": "t",
            "body": "b",
            "tags": ["x", "y"],
            "source": "s",
            "card_type": "knowledge",
            "metadata": {"n": 1, "f": 1.5, "ok": True, "list": ["a", 2]},
            "private": True,
        }
    )
    assert isinstance(parsed, PutRequest)
    assert parsed.kind == "card" and parsed.tags == ["x", "y"] and parsed.private is True
    assert parsed.metadata == {"n": 1, "f": 1.5, "ok": True, "list": ["a", 2]}


def test_nested_objects_parse() -> None:
    init = parse_request(
        {"op": "init", "password": SECRET, "kdf": {"time_cost": 1, "memory_kib": 19456}}
    )
    assert isinstance(init, InitRequest) and init.kdf is not None
    assert (init.kdf.time_cost, init.kdf.memory_kib, init.kdf.parallelism) == (1, 19456, 4)
    define = parse_request(
        {
            "op": "card_type_define",
            "name": "book",
            "fields": [{"name": "pages", "type": "integer", "required": True, "minimum": 1}],
        }
    )
    assert isinstance(define, CardTypeDefineRequest)
    assert define.fields[0].model_dump(exclude_none=True) == {
        "name": "pages",
        "type": "integer",
        "required": True,
        "description": "",
        "minimum": 1,
    }


def test_secrets_and_content_stay_out_of_reprs() -> None:
    sudo = parse_request({"op": "sudo", "password": SECRET})
    cred = parse_request({"op": "credential_put", "title": "TITLE-X", "secret": SECRET})
    put = parse_request({"op": "put", "title": "TITLE-X", "body": "BODY-X", "tags": ["TAG-X"]})
    file = parse_request({"op": "file_put", "name": "NAME-X", "data": "QkxPQi1Y"})
    for request in (sudo, cred, put, file):
        text = repr(request) + str(request)
        for value in (SECRET, "TITLE-X", "BODY-X", "TAG-X", "NAME-X", "QkxPQi1Y"):
            assert value not in text
    assert isinstance(sudo, SudoRequest) and sudo.password.get_secret_value() == SECRET
    assert isinstance(cred, CredentialPutRequest) and cred.secret.get_secret_value() == SECRET
    assert isinstance(file, FilePutRequest) and file.data == "QkxPQi1Y"


@pytest.mark.parametrize(
    "data",
    [{"op": SECRET}, {"op": 7}, {"op": None}, {"no_op": SECRET}, {}],
    ids=["unknown", "number", "null", "missing", "empty"],
)
def test_unknown_or_missing_op_lists_the_valid_ops(data: dict[str, Any]) -> None:
    message = refused(data)
    assert message.startswith("unknown op; use one of: init, unlock")


@pytest.mark.parametrize("data", [[{"op": "lock"}], "lock", None, 3])
def test_a_request_must_be_an_object(data: object) -> None:
    assert refused(data) == "a request must be an object with an op"


def test_missing_required_field_is_named() -> None:
    assert refused({"op": "put", "body": SECRET}) == "put: field 'title' is required"
    assert refused({"op": "unlock"}) == "unlock: field 'password' is required"


def test_unknown_field_is_named_but_not_its_value() -> None:
    assert refused({"op": "lock", "x": SECRET}) == "lock: unknown field 'x'"
    assert refused({"op": "read", "ref": "abcd", "password": SECRET}) == (
        "read: unknown field 'password'"
    )


def test_unknown_field_with_an_odd_name_is_not_repeated() -> None:
    message = refused({"op": "lock", SECRET: 1})
    assert message == "lock: unknown field"
    message = refused({"op": "lock", SECRET: 1, "Other Name": 2})
    assert message == "lock: 2 unknown fields"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"op": "sudo", "password": SECRET, "minutes": "5"}, "field 'minutes' must be a whole"),
        ({"op": "sudo", "password": SECRET, "minutes": 5.0}, "field 'minutes' must be a whole"),
        ({"op": "sudo", "password": SECRET, "minutes": True}, "field 'minutes' must be a whole"),
        ({"op": "vault_create", "name": "n", "local": 1}, "field 'local' must be true or false"),
        ({"op": "vault_create", "name": "n", "local": "true"}, "must be true or false"),
        ({"op": "put", "title": 5}, "field 'title' must be text"),
        ({"op": "put", "title": "t", "tags": "a,b"}, "field 'tags' must be a list"),
        ({"op": "put", "title": "t", "tags": [SECRET, 3]}, "field 'tags[1]' must be text"),
        ({"op": "unlock", "password": 12345}, "field 'password' must be text"),
        ({"op": "put", "title": "t", "kind": SECRET}, "field 'kind' must be one of:"),
        ({"op": "read", "ref": ""}, "field 'ref' must not be empty"),
        ({"op": "sudo", "password": SECRET, "minutes": 61}, "field 'minutes' must be at most 60"),
        ({"op": "audit_list", "limit": 0}, "field 'limit' must be at least 1"),
        ({"op": "put", "title": "t", "metadata": [SECRET]}, "field 'metadata' must be an object"),
        (
            {"op": "put", "title": "t", "metadata": {SECRET: None}},
            "field 'metadata' has a value of the wrong type",
        ),
        (
            {"op": "init", "password": SECRET, "kdf": {"time_cost": "1"}},
            "field 'kdf.time_cost' must be a whole number",
        ),
        (
            {"op": "init", "password": SECRET, "kdf": {"memory_kib": 1024}},
            "field 'kdf.memory_kib' must be at least 19456",
        ),
        (
            {"op": "card_type_define", "name": "n", "fields": [{"name": "a"}]},
            "field 'fields[0].type' is required",
        ),
        (
            {"op": "card_type_define", "name": "n", "fields": [{"name": "a", "type": "t", "z": 1}]},
            "unknown field 'fields[0].z'",
        ),
        ({"op": "file_put", "name": "n", "data": SECRET + "=="}, "field 'data' has characters"),
    ],
)
def test_wrong_types_and_sizes_name_the_field_not_the_value(
    data: dict[str, Any], expected: str
) -> None:
    message = refused(data)
    assert message.startswith(f"{data['op']}: ")
    assert expected in message


def test_coarse_length_limits_apply_before_the_domain() -> None:
    message = refused({"op": "put", "title": "t", "body": "x" * (8 * 1024 * 1024 + 1)})
    assert message == "put: field 'body' is too long (at most 8388608 characters)"
    message = refused({"op": "put", "title": "t", "tags": ["a"] * 257})
    assert message == "put: field 'tags' is too long (at most 256 items)"
    message = refused({"op": "unlock", "password": SECRET * 100})
    assert message == "unlock: field 'password' is too long (at most 1024 characters)"


def test_several_problems_are_reported_briefly() -> None:
    message = refused({"op": "put", "title": 1, "body": 2, "tags": 3, "source": 4, "vault": 5})
    assert message.startswith("put: field ")
    assert message.endswith("and 2 more")


def test_parsed_requests_are_frozen() -> None:
    parsed = parse_request({"op": "read", "ref": "abcd"})
    assert isinstance(parsed, ReadRequest)
    with pytest.raises(ValueError, match="frozen"):
        parsed.ref = "other"


def test_the_kdf_bounds_of_requests_match_the_ones_crypto_enforces() -> None:
    from memories.crypto import kdf
    from memories.service.requests import session

    names = [
        n for n in dir(kdf) if n.startswith(("DEFAULT_", "FLOOR_", "MAX_")) and "SALT" not in n
    ]
    assert names
    for name in names:
        assert getattr(session, name) == getattr(kdf, name), name


def test_building_requests_does_not_load_the_crypto_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memories.service.requests\n"
        "heavy = [m for m in ('memories.crypto', 'memories.store', 'memories.vault', "
        "'cryptography', 'argon2') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == ""


def test_the_package_names_where_each_request_lives_and_loads_it_on_demand() -> None:
    import ast
    import importlib
    import subprocess
    import sys
    from pathlib import Path

    import memories.service.requests as package

    # What mypy sees (the TYPE_CHECKING imports) is what the package serves at run time.
    tree = ast.parse(Path(package.__file__ or "").read_text(encoding="utf-8"))
    typed = {
        alias.name: "." + node.module.rsplit(".", 1)[-1]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and ".requests." in node.module
        for alias in node.names
    }
    assert typed == package._DEFINED_IN
    assert set(package.__all__) == set(typed)
    for name, area in typed.items():
        module = importlib.import_module(f"memories.service.requests{area}")
        assert getattr(package, name) is getattr(module, name)
    probe = (
        "import sys\n"
        "from memories.service.requests import ListRequest\n"
        "print(sorted(m for m in sys.modules if m.startswith('memories.service.requests.')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert loaded.strip() == str(
        ["memories.service.requests.assets", "memories.service.requests.base"]
    )
