"""`memories grant create/ls/revoke` against a real daemon, and grant connections to that daemon."""

from __future__ import annotations

import pytest

from memories.cli.grants_cmd import SCOPES, parse_duration
from memories.config import load_settings
from memories.errors import (
    UNAUTHORIZED_MESSAGE,
    DeniedError,
    LockedError,
    UnauthorizedError,
    UsageError,
)
from memories.ipc import IpcClient
from memories.service.grants import GRANT_SCOPES
from tests.memories.cli.conftest import Memories
from tests.support import wait_for

CANARY = "qx-CANARY-91f2"


def agent(token: str) -> IpcClient:
    return IpcClient(load_settings().socket_path, timeout=30, grant_token=token)


def create(store: Memories, *args: str) -> tuple[str, str]:
    """Create a grant (elevating first); returns its token (stdout) and stderr."""
    assert store("sudo").code == 0
    result = store("grant", "create", *args)
    assert result.code == 0, result.stderr
    return result.stdout, result.stderr


def test_the_scopes_on_the_command_line_are_the_services() -> None:
    assert SCOPES == GRANT_SCOPES


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30d", 30 * 86400),
        ("12h", 43200),
        ("90m", 5400),
        ("45s", 45),
        ("2w", 1209600),
        ("1d12h", 129600),
        (" 1H30M ", 5400),
    ],
)
def test_durations_are_a_number_and_a_unit(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "d", "1.5h", "-1d", "1y", "0m", "3661d", CANARY])
def test_bad_durations_are_refused_without_being_repeated(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_duration(text)
    assert CANARY not in raised.value.message
    assert "--expires" in raised.value.message


def test_create_prints_the_token_once_and_ls_and_revoke_never_show_it(store: Memories) -> None:
    denied = store.fails(3, "grant", "create", "--name", "claude", "--scope", "read")
    assert denied["code"] == "denied"
    assert "memories sudo" in denied["message"]
    stdout, stderr = create(store, "--name", "claude", "--scope", "read_write", "--expires", "30d")
    token = stdout.strip()
    assert stdout == token + "\n"  # the token alone on stdout: TOKEN=$(memories grant create ...)
    assert token.startswith("mem_grant_")
    assert "shown only once" in stderr
    assert token not in stderr
    made = store.ok("grant", "create", "--name", "ci", "--scope", "read")
    assert set(made) == {"grant", "token"}
    assert made["grant"]["name"] == "ci"
    assert made["grant"]["expires_at"] is None
    listed = store.ok("grant", "ls")["grants"]
    assert [g["name"] for g in listed] == ["claude", "ci"]
    table = store("grant", "ls")
    assert table.code == 0
    assert "claude" in table.stdout
    assert "live" in table.stdout
    revoked = store.ok("grant", "revoke", "claude")["grant"]
    assert revoked["revoked_at"] is not None
    plain = store("grant", "revoke", made["grant"]["id"][:8])
    assert plain.code == 0
    assert "revoked grant ci" in plain.stdout
    after = store("grant", "ls")
    assert after.stdout.count("revoked") == 2
    for output in (table.stdout, after.stdout, str(listed), str(revoked)):
        assert token not in output
        assert made["token"] not in output


def test_bad_grant_arguments_are_clear_errors(store: Memories) -> None:
    assert store("sudo").code == 0
    bad_scope = store("grant", "create", "--name", "a", "--scope", CANARY)
    assert bad_scope.code == 2
    assert "--scope" in bad_scope.stderr
    for duration in ("3x", "0d", "99999d"):
        error = store.fails(
            2, "grant", "create", "--name", "a", "--scope", "read", "--expires", duration
        )
        assert "--expires" in error["message"]
    name = store.fails(2, "grant", "create", "--name", "-" + CANARY, "--scope", "read")
    assert "grant name" in name["message"]
    assert CANARY not in name["message"]
    vault = store.fails(1, "grant", "create", "--name", "a", "--scope", "read", "--vault", CANARY)
    assert vault["code"] == "not_found"
    assert CANARY not in vault["message"]
    missing = store.fails(1, "grant", "revoke", CANARY)
    assert missing["code"] == "not_found"
    assert store.ok("grant", "ls") == {"grants": []}


def test_the_daemon_keeps_no_token_in_its_files_or_its_log(store: Memories) -> None:
    stdout, _ = create(store, "--name", "claude", "--scope", "read")
    token = stdout.strip()
    with agent(token) as client:
        assert client.call({"op": "list"}) == {"summaries": []}
    with agent(token + "x") as client, pytest.raises(UnauthorizedError):
        client.call({"op": "list"})
    assert store("daemon", "stop").code == 0  # everything it held is flushed and closed
    settings = load_settings()
    roots = {settings.store_path.parent, settings.socket_path.parent, settings.log_path.parent}
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    assert settings.store_path in files
    assert settings.log_path in files
    assert "refused a grant token" in settings.log_path.read_text(encoding="utf-8")
    for path in files:
        data = path.read_bytes()
        assert token.encode() not in data, path
        assert token.removeprefix("mem_grant_")[:24].encode() not in data, path


def test_a_grant_connection_to_the_daemon_follows_revocation_and_lock(store: Memories) -> None:
    assert store.ok("put", "shared note")["asset"]
    token, _ = create(store, "--name", "claude", "--scope", "read")
    token = token.strip()
    with agent(token) as client:
        assert client.grant is None
        titles = [s["title"] for s in client.call({"op": "list"})["summaries"]]
        assert titles == ["shared note"]
        assert client.grant is not None
        assert client.grant["name"] == "claude"
        with pytest.raises(DeniedError, match="does not allow write"):
            client.call({"op": "put", "title": "from the agent"})
        with pytest.raises(DeniedError, match="not available to MCP clients"):
            client.call({"op": "grant_create", "name": "mine", "scope": "allow_all"})
        assert store("lock").code == 0
        with pytest.raises(LockedError):
            client.call({"op": "list"})
        assert store("unlock").code == 0
        assert len(client.call({"op": "list"})["summaries"]) == 1
        assert store("grant", "revoke", "claude").code == 0
        with pytest.raises(UnauthorizedError) as raised:
            client.call({"op": "list"})
        assert raised.value.message == UNAUTHORIZED_MESSAGE


def test_an_expired_grant_is_refused(store: Memories) -> None:
    token, _ = create(store, "--name", "brief", "--scope", "read", "--expires", "1s")
    token = token.strip()

    def refused() -> bool:
        with agent(token) as client:
            try:
                client.call({"op": "list"})
            except UnauthorizedError:
                return True
        return False

    assert wait_for(refused, timeout=30)
    listed = store("grant", "ls")
    assert "expired" in listed.stdout
