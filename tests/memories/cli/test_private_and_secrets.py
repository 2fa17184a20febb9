"""Private memories need sudo; credentials are written under sudo and never shown."""

from __future__ import annotations

import json

from memories.config import load_settings
from tests.memories.cli.conftest import PASSWORD, Memories

SECRET = "ghp_s3cr3t-Value-9f8e7d6c5b4a"


def test_sudo_elevates_later_commands_for_private_memories_and_credentials(
    store: Memories,
) -> None:
    private = store.ok("put", "My salary is 42", "--title", "salary", "--private")
    public = store.ok("put", "Public note")
    listed = store.ok("ls")["summaries"]
    assert [s["id"] for s in listed] == [public["asset"]]  # private ones stay hidden

    denied = store("show", private["short_id"])
    assert denied.code == 3
    assert "memories sudo" in denied.stderr
    refused = store("credential", "put", "GitHub token", "--secret-stdin", input=SECRET + "\n")
    assert refused.code == 3
    assert "memories sudo" in refused.stderr
    assert SECRET not in refused.stdout + refused.stderr
    assert "42" not in denied.stdout + denied.stderr
    assert store.fails(3, "edit", private["short_id"], "changed")["code"] == "denied"

    sudo = store("sudo", "--minutes", "2")
    assert sudo.code == 0, sudo.stderr
    assert "elevated" in sudo.stdout
    assert PASSWORD not in sudo.stdout + sudo.stderr

    # A separate invocation from the same parent process is now elevated.
    assert store.ok("show", private["short_id"])["body"] == "My salary is 42"
    assert {s["id"] for s in store.ok("ls")["summaries"]} == {private["asset"], public["asset"]}
    assert store.ok("status")["elevated"] is True

    put = store("credential", "put", "GitHub token", "--secret-stdin", input=SECRET + "\n")
    assert put.code == 0, put.stderr
    assert SECRET not in put.stdout + put.stderr
    short = put.stdout.strip()

    outputs = [
        store("show", short),
        store("show", short, "--json"),
        store("ls"),
        store("ls", "--json"),
        store("history", short, "--json"),
        store("diff", short, "--json"),
        store("audit", "--json"),
    ]
    for result in outputs:
        assert result.code == 0, result.stderr
        assert SECRET not in result.stdout + result.stderr
    view = json.loads(outputs[1].stdout)
    assert view["kind"] == "credential" and view["secret_hidden"] is True
    assert view["body"] is None
    assert "hidden" in outputs[0].stdout
    # Nothing on disk holds the secret or the password in the clear: the daemon's log, the
    # store, its WAL, the lock and anchor files.
    files = [p for p in load_settings().data_home.rglob("*") if p.is_file()]
    assert any(p.name == "daemon.log" for p in files)
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data and PASSWORD.encode() not in data, path.name


def test_wrong_password_is_denied_and_passwd_changes_it(store: Memories) -> None:
    assert store.ok("lock")["locked"] is True
    wrong = "not-the-password-123"
    result = store("unlock", env={"MEMORIES_PASSWORD": wrong})
    assert result.code == 3
    assert "password" in result.stderr
    assert wrong not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    as_json = store("unlock", "--json", env={"MEMORIES_PASSWORD": wrong})
    assert as_json.code == 3
    assert as_json.json()["error"]["code"] == "denied"
    assert wrong not in as_json.stdout + as_json.stderr

    from_stdin = store("unlock", "--password-stdin", input=PASSWORD + "\n")
    assert from_stdin.code == 0, from_stdin.stderr

    new = "a brand new passphrase"
    changed = store("passwd", "--password-stdin", "--json", input=f"{PASSWORD}\n{new}\n")
    assert changed.code == 0, changed.stderr
    assert changed.json() == {"changed": True}
    assert new not in changed.stdout + changed.stderr
    assert PASSWORD not in changed.stdout + changed.stderr

    assert store.ok("lock")["locked"] is True
    assert store("unlock").code == 3  # MEMORIES_PASSWORD still holds the old one
    assert store("unlock", env={"MEMORIES_PASSWORD": new}).code == 0
