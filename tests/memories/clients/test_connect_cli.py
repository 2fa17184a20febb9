"""`memories connect` / `disconnect` through the console script against a real daemon: the
grant, the token file and the client's config, and everything that must not happen."""

from __future__ import annotations

import hashlib
import json
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from memories.cli.connect_cmd import grant_name
from tests.memories.cli.conftest import Memories

CLAUDE = """\
{
  "numStartups": 7,
  "mcpServers": {
    "github": {"type": "stdio", "command": "npx", "args": ["-y", "server-github"]}
  },
  "projects": {}
}
"""


def _live(store: Memories) -> list[dict[str, Any]]:
    grants = store.ok("grant", "ls")["grants"]
    return [g for g in grants if not g["revoked_at"]]


def _token_file(home: Path, connection: str) -> Path:
    return home / ".local" / "share" / "memories" / "clients" / f"{connection}.token"


def _project_connection(client: str, project: Path) -> str:
    digest = hashlib.sha256(str(project.resolve()).encode("utf-8")).hexdigest()[:8]
    return f"{client}-project-{project.name}-{digest}"


def _backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.memories-backup-*"))


def test_connect_claude_code_then_again_then_disconnect(
    store: Memories, isolated_home: Path
) -> None:
    config = isolated_home / ".claude.json"
    config.write_text(CLAUDE, encoding="utf-8")
    store.ok("sudo")
    first = store.ok("connect", "claude-code")
    assert first["grant"]["minted"] is True
    assert first["grant"]["name"] == grant_name("claude-code", socket.gethostname())
    assert first["grant"]["scope"] == "read_write"
    [file] = first["files"]
    assert file["action"] == "updated" and file["path"] == str(config)

    written = json.loads(config.read_text(encoding="utf-8"))
    assert written["numStartups"] == 7 and "github" in written["mcpServers"]
    token_path = _token_file(isolated_home, "claude-code")
    memories_entry = written["mcpServers"]["memories"]
    assert memories_entry["args"] == ["mcp", "--token-file", str(token_path)]
    assert Path(memories_entry["command"]).name == "memories"
    assert written["mcpServers"]["urchin"]["args"] == ["mcp"]
    # The token is in its own private file and nowhere in the config.
    token = token_path.read_text(encoding="utf-8").strip()
    assert len(token) >= 16 and token not in config.read_text(encoding="utf-8")
    assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_path.parent.stat().st_mode) == 0o700
    [backup] = _backups(isolated_home)
    assert backup.read_text(encoding="utf-8") == CLAUDE
    assert len(_live(store)) == 1

    # A second connect changes nothing and mints nothing.
    after_first = config.read_bytes()
    second = store.ok("connect", "claude-code")
    assert second["grant"]["minted"] is False
    assert second["files"][0]["action"] == "unchanged"
    assert config.read_bytes() == after_first
    assert len(_backups(isolated_home)) == 1
    assert len(_live(store)) == 1
    assert token_path.read_text(encoding="utf-8").strip() == token

    gone = store.ok("disconnect", "claude-code")
    assert [g["name"] for g in gone["revoked"]] == [first["grant"]["name"]]
    assert gone["token_file_removed"] is True
    assert config.read_text(encoding="utf-8") == CLAUDE
    assert not token_path.exists()
    assert _live(store) == []


def test_dry_run_changes_no_file_and_mints_no_grant(store: Memories, isolated_home: Path) -> None:
    config = isolated_home / ".claude.json"
    config.write_text(CLAUDE, encoding="utf-8")
    before = config.stat().st_mtime_ns
    result = store("connect", "claude-code", "--dry-run")
    assert result.code == 0, result.stderr
    assert '+    "memories": {' in result.stdout and "--- " in result.stdout
    assert "nothing was changed" in result.stdout
    assert config.read_text(encoding="utf-8") == CLAUDE and config.stat().st_mtime_ns == before
    assert _backups(isolated_home) == []
    assert not _token_file(isolated_home, "claude-code").parent.exists()
    assert store.ok("grant", "ls")["grants"] == []
    # A dry run needs no elevation and no daemon call: it also works for disconnect.
    assert store("disconnect", "claude-code", "--dry-run").code == 0
    assert store.ok("grant", "ls")["grants"] == []


def test_malformed_config_is_refused_before_a_grant_is_minted(
    store: Memories, isolated_home: Path
) -> None:
    config = isolated_home / ".cursor" / "mcp.json"
    config.parent.mkdir()
    broken = '{\n  "mcpServers": {\n    "a": {"command": "x"},,\n  }\n}\n'
    config.write_text(broken, encoding="utf-8")
    store.ok("sudo")
    error = store.fails(1, "connect", "cursor")
    assert "not valid JSON" in error["message"] and "line 3" in error["message"]
    assert "nothing was changed" in error["message"]
    assert config.read_text(encoding="utf-8") == broken
    assert _backups(config.parent) == []
    assert store.ok("grant", "ls")["grants"] == []
    assert not _token_file(isolated_home, "cursor").exists()


def test_without_elevation_connect_says_to_run_sudo_and_changes_nothing(
    store: Memories, isolated_home: Path
) -> None:
    error = store.fails(3, "connect", "gemini")
    assert "memories sudo" in error["message"]
    assert not (isolated_home / ".gemini").exists()
    assert not _token_file(isolated_home, "gemini").exists()


def test_unknown_client_and_missing_scope_are_usage_errors(store: Memories) -> None:
    unknown = store("connect", "notepad")
    assert unknown.code == 2 and "notepad" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    assert store.fails(2, "connect", "codex", "--scope", "project")["message"].startswith(
        "Codex has no project scope"
    )
    hook = store.fails(2, "connect", "cursor", "--context-hook")
    assert "only for claude-code" in hook["message"]
    assert store.ok("grant", "ls")["grants"] == []


def test_project_scope_names_the_token_file_through_the_clients_home_variable(
    store: Memories, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    connection = _project_connection("cursor", project)
    store.ok("sudo")
    result = store.ok(
        "connect", "cursor", "--scope", "project", "--grant-scope", "read", cwd=project
    )
    assert result["grant"]["scope"] == "read"
    config = project / ".cursor" / "mcp.json"
    entry = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["memories"]
    # Shared with the team: a bare command and no user's path, let alone a token.
    assert entry == {
        "command": "memories",
        "args": [
            "mcp",
            "--token-file",
            f"${{userHome}}/.local/share/memories/clients/{connection}.token",
        ],
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o644
    assert _token_file(isolated_home, connection).exists()
    store.ok("disconnect", "cursor", "--scope", "project", cwd=project)
    assert json.loads(config.read_text(encoding="utf-8")) == {"mcpServers": {}}


def test_codex_toml_round_trip_through_the_cli(store: Memories, isolated_home: Path) -> None:
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = '# mine\nmodel = "o3"  # keep\n\n[mcp_servers.docs]\ncommand = "npx"\n'
    config.write_text(original, encoding="utf-8")
    store.ok("sudo")
    store.ok("connect", "codex")
    text = config.read_text(encoding="utf-8")
    assert text.startswith(original)
    assert "[mcp_servers.memories]" in text and "startup_timeout_sec = 30" in text
    store.ok("disconnect", "codex")
    assert config.read_text(encoding="utf-8") == original


def test_context_hook_is_installed_and_removed(store: Memories, isolated_home: Path) -> None:
    store.ok("sudo")
    result = store.ok("connect", "claude-code", "--context-hook")
    assert [f["purpose"] for f in result["files"]] == ["MCP servers", "context hook"]
    settings = isolated_home / ".claude" / "settings.json"
    [group] = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert group["matcher"] == "startup|resume|clear|compact"
    [hook] = group["hooks"]
    assert hook["type"] == "command" and hook["timeout"] == 10
    assert hook["command"].endswith("memories context")
    store.ok("disconnect", "claude-code")
    assert json.loads(settings.read_text(encoding="utf-8")) == {}


def test_a_lost_token_file_gets_a_fresh_grant_and_the_old_one_revoked(
    store: Memories, isolated_home: Path
) -> None:
    store.ok("sudo")
    first = store.ok("connect", "vscode")
    token_path = _token_file(isolated_home, "vscode")
    token_path.unlink()
    second = store.ok("connect", "vscode")
    assert second["grant"]["minted"] is True
    assert second["grant"]["id"] != first["grant"]["id"]
    assert [g["id"] for g in _live(store)] == [second["grant"]["id"]]
    assert token_path.exists()


def test_a_foreign_server_with_our_name_is_kept_and_nothing_minted(
    store: Memories, isolated_home: Path
) -> None:
    config = isolated_home / ".gemini" / "settings.json"
    config.parent.mkdir()
    theirs = '{"mcpServers": {"memories": {"command": "npx", "args": ["-y", "other-memory"]}}}'
    config.write_text(theirs, encoding="utf-8")
    store.ok("sudo")
    error = store.fails(1, "connect", "gemini")
    assert "not ours" in error["message"]
    assert config.read_text(encoding="utf-8") == theirs
    assert store.ok("grant", "ls")["grants"] == []


@pytest.mark.parametrize("client", ["opencode", "vscode"])
def test_jsonc_configs_keep_their_comments_through_the_cli(
    store: Memories, isolated_home: Path, client: str
) -> None:
    if client == "opencode":
        config = isolated_home / ".config" / "opencode" / "opencode.jsonc"
        original = '{\n  // theme first\n  "theme": "tokyonight",\n}\n'
    else:
        config = isolated_home / ".config" / "Code" / "User" / "mcp.json"
        original = (
            '// my servers\n{\n  "servers": {\n'
            '    "x": {"type": "stdio", "command": "y"}, // y\n  },\n}\n'
        )
    config.parent.mkdir(parents=True)
    config.write_text(original, encoding="utf-8")
    store.ok("sudo")
    store.ok("connect", client)
    text = config.read_text(encoding="utf-8")
    assert (
        ("// theme first" in text)
        if client == "opencode"
        else ("// y" in text and "// my servers" in text)
    )
    store.ok("disconnect", client)
    restored = config.read_text(encoding="utf-8")
    if client == "vscode":
        assert restored == original
    else:
        assert restored == '{\n  // theme first\n  "theme": "tokyonight",\n  "mcp": {},\n}\n'


def test_another_grant_scope_replaces_the_grant_and_keeps_the_config(
    store: Memories, isolated_home: Path
) -> None:
    store.ok("sudo")
    first = store.ok("connect", "codex")
    config = isolated_home / ".codex" / "config.toml"
    written = config.read_bytes()
    second = store.ok("connect", "codex", "--grant-scope", "read")
    assert second["grant"]["minted"] is True and second["grant"]["scope"] == "read"
    assert [g["id"] for g in _live(store)] == [second["grant"]["id"]]
    assert first["grant"]["id"] != second["grant"]["id"]
    assert config.read_bytes() == written
    assert second["files"][0]["action"] == "unchanged"


def test_projects_with_the_same_folder_name_get_their_own_grant_and_token(
    store: Memories, isolated_home: Path, tmp_path: Path
) -> None:
    one = tmp_path / "one" / "app"
    two = tmp_path / "two" / "app"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    store.ok("sudo")
    first = store.ok("connect", "gemini", "--scope", "project", cwd=one)
    second = store.ok("connect", "gemini", "--scope", "project", cwd=two)
    assert first["grant"]["minted"] is True and second["grant"]["minted"] is True
    assert first["grant"]["name"] != second["grant"]["name"]
    assert first["token_file"] != second["token_file"]
    assert {g["id"] for g in _live(store)} == {first["grant"]["id"], second["grant"]["id"]}
    tokens = [Path(r["token_file"]).read_text(encoding="utf-8") for r in (first, second)]
    assert tokens[0] != tokens[1]
    for project, result in ((one, first), (two, second)):
        assert Path(result["token_file"]) == _token_file(
            isolated_home, _project_connection("gemini", project)
        )
        args = json.loads((project / ".gemini" / "settings.json").read_text(encoding="utf-8"))[
            "mcpServers"
        ]["memories"]["args"]
        assert args[-1].endswith(Path(result["token_file"]).name)

    # Connecting the first project again keeps its grant; the second one's is untouched.
    again = store.ok("connect", "gemini", "--scope", "project", cwd=one)
    assert again["grant"]["minted"] is False and again["grant"]["id"] == first["grant"]["id"]
    store.ok("disconnect", "gemini", "--scope", "project", cwd=one)
    assert [g["id"] for g in _live(store)] == [second["grant"]["id"]]
    assert Path(second["token_file"]).exists() and not Path(first["token_file"]).exists()


def test_another_vault_replaces_the_grant_and_an_unknown_one_keeps_it(
    store: Memories, isolated_home: Path
) -> None:
    work = store.ok("vault", "create", "work")
    store.ok("sudo")
    first = store.ok("connect", "cursor")
    again = store.ok("connect", "cursor")
    assert again["grant"]["minted"] is False
    second = store.ok("connect", "cursor", "--vault", "work")
    assert second["grant"]["minted"] is True
    assert second["grant"]["vaults"] == [work["id"]]
    assert second["grant"]["vaults"] != first["grant"]["vaults"]
    assert [g["id"] for g in _live(store)] == [second["grant"]["id"]]
    # Naming the same vault by its id is the same grant.
    same = store.ok("connect", "cursor", "--vault", work["id"])
    assert same["grant"]["minted"] is False and same["grant"]["id"] == second["grant"]["id"]

    missing = store.fails(1, "connect", "cursor", "--vault", "nowhere")
    assert "no vault has that name" in missing["message"]
    assert [g["id"] for g in _live(store)] == [second["grant"]["id"]]
    assert _token_file(isolated_home, "cursor").exists()


def test_no_output_and_no_config_carries_the_token(store: Memories, isolated_home: Path) -> None:
    store.ok("sudo")
    outputs = [store("connect", "gemini", "--json"), store("connect", "gemini")]
    token = _token_file(isolated_home, "gemini").read_text(encoding="utf-8").strip()
    for result in outputs:
        assert result.code == 0, result.stderr
        assert token not in result.stdout + result.stderr
    settings = isolated_home / ".gemini" / "settings.json"
    assert token not in settings.read_text(encoding="utf-8")
    assert outputs[0].json()["files"][0]["diff"] is None  # only a dry run shows the file
