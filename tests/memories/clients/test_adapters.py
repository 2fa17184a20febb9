"""Each client's adapter on realistic config files: our entries go in and come out again,
and everything else (comments, other servers, layout) stays as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import example, given
from hypothesis import strategies as st

from memories.cli.connect_cmd import grant_name
from memories.clients import CLIENT_NAMES, OUR_NAMES, Place, Server, client
from memories.clients.claude_code import add_context_hook, remove_context_hook
from memories.clients.errors import ForeignEntryError, UnknownScopeError, UnreadableConfigError
from memories.clients.jsonc import JsoncDocument
from memories.clients.opencode import detect_version
from memories.clients.setup import connection_id, servers_for, token_reference

HOME = Path("/home/ada")
PLACE = Place(home=HOME, project=Path("/home/ada/src/shop"), env={})
TOKEN = HOME / ".local/share/memories/clients/x.token"
SERVERS = servers_for({"memories": "/opt/bin/memories", "urchin": "/opt/bin/urchin"}, str(TOKEN))
WHERE = Path("config")

CLAUDE_USER = """\
{
  "numStartups": 42,
  "theme": "dark",
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    }
  },
  "projects": {
    "/home/ada/src/shop": {
      "allowedTools": [],
      "mcpServers": {}
    }
  }
}
"""

CURSOR = """\
{
  "mcpServers": {
    "browser": {
      "command": "npx",
      "args": ["-y", "@browsermcp/mcp@latest"]
    }
  }
}
"""

GEMINI = """\
{
  "general": {"vimMode": true},
  "ui": {"theme": "GitHub"},
  "mcpServers": {
    "py": {"command": "python", "args": ["-m", "tools"], "timeout": 30000, "trust": false}
  }
}
"""

VSCODE = """\
// Servers for this workspace
{
  "inputs": [
    {
      "type": "promptString",
      "id": "api-key",
      "description": "API key", // asked once
      "password": true
    }
  ],
  "servers": {
    "fetch": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-fetch"],
    },
  },
}
"""

OPENCODE_V1 = """\
{
  "$schema": "https://opencode.ai/config.json",
  // my model
  "model": "anthropic/claude-sonnet-4",
  "mcp": {
    "context7": {"type": "remote", "url": "https://mcp.context7.com/mcp", "enabled": true}
  }
}
"""

OPENCODE_V2 = """\
{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "servers": {
      "my-server": {
        "type": "local",
        "command": ["npx", "-y", "example-mcp-server"],
      },
    },
  },
}
"""

CODEX = """\
# Codex settings
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env = { "LOG" = "warn" }

# per-profile overrides
[profiles.fast]
model = "gpt-5-mini"
"""

JSON_CASES = [
    ("claude-code", "user", CLAUDE_USER, ["mcpServers"]),
    ("claude-code", "local", CLAUDE_USER, ["projects", "/home/ada/src/shop", "mcpServers"]),
    ("cursor", "user", CURSOR, ["mcpServers"]),
    ("gemini", "project", GEMINI, ["mcpServers"]),
    ("vscode", "project", VSCODE, ["servers"]),
    ("opencode", "user", OPENCODE_V1, ["mcp"]),
    ("opencode", "project", OPENCODE_V2, ["mcp", "servers"]),
]


@pytest.mark.parametrize(("name", "scope", "text", "path"), JSON_CASES)
def test_connect_adds_our_servers_and_keeps_everything_else(
    name: str, scope: str, text: str, path: list[str]
) -> None:
    adapter = client(name)
    new = adapter.connect(text, SERVERS, scope, PLACE, WHERE)  # type: ignore[arg-type]
    before, after = JsoncDocument(text).value, JsoncDocument(new).value
    servers = JsoncDocument(new).get(path)
    assert set(servers) == set(JsoncDocument(text).get(path) or {}) | {"memories", "urchin"}
    argv = adapter.argv_of(servers["memories"])  # type: ignore[attr-defined]
    assert argv == ["/opt/bin/memories", "mcp", "--token-file", str(TOKEN)]
    assert adapter.argv_of(servers["urchin"]) == ["/opt/bin/urchin", "mcp"]  # type: ignore[attr-defined]
    # Everything outside our two entries is unchanged, comments included.
    for line in text.splitlines():
        if line.strip() not in {"}", "},", "{"} and not line.endswith("{}"):
            assert line.rstrip(",") in new
    if path == ["mcpServers"]:
        for key in before:
            if key != "mcpServers":
                assert after[key] == before[key]
    # Running it again changes nothing; taking it out gives back the same bytes.
    assert adapter.connect(new, SERVERS, scope, PLACE, WHERE) == new  # type: ignore[arg-type]
    assert adapter.disconnect(new, scope, PLACE, WHERE) == text  # type: ignore[arg-type]


def test_shapes_follow_each_clients_docs() -> None:
    shapes = {}
    for name, scope, text, path in JSON_CASES:
        new = client(name).connect(text, SERVERS, scope, PLACE, WHERE)  # type: ignore[arg-type]
        shapes[(name, scope)] = JsoncDocument(new).get([*path, "memories"])
    assert shapes[("claude-code", "user")]["type"] == "stdio"
    assert shapes[("vscode", "project")]["type"] == "stdio"
    assert "type" not in shapes[("cursor", "user")]
    assert shapes[("opencode", "user")] == {
        "type": "local",
        "command": ["/opt/bin/memories", "mcp", "--token-file", str(TOKEN)],
        "enabled": True,
    }
    assert "enabled" not in shapes[("opencode", "project")]  # version 2: on unless disabled


def test_opencode_version_is_read_from_the_file() -> None:
    assert detect_version(JsoncDocument(OPENCODE_V1)) == 1
    assert detect_version(JsoncDocument(OPENCODE_V2)) == 2
    assert detect_version(JsoncDocument("{}")) == 1
    # A version 1 server that happens to be called "servers" is still version 1.
    named = '{"mcp": {"servers": {"type": "local", "command": ["x"], "enabled": true}}}'
    assert detect_version(JsoncDocument(named)) == 1


def test_codex_toml_keeps_comments_and_round_trips_byte_for_byte() -> None:
    codex = client("codex")
    new = codex.connect(CODEX, SERVERS, "user", PLACE, WHERE)
    assert "# Codex settings" in new and "# the default model" in new
    assert "# per-profile overrides" in new
    doc = tomlkit.parse(new).unwrap()
    assert doc["mcp_servers"]["memories"] == {
        "command": "/opt/bin/memories",
        "args": ["mcp", "--token-file", str(TOKEN)],
        "startup_timeout_sec": 30,
    }
    assert doc["mcp_servers"]["urchin"]["args"] == ["mcp"]
    assert doc["mcp_servers"]["context7"]["env"] == {"LOG": "warn"}
    assert doc["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert codex.connect(new, SERVERS, "user", PLACE, WHERE) == new
    assert codex.disconnect(new, "user", PLACE, WHERE) == CODEX


@pytest.mark.parametrize(
    "text", ["", 'model = "o3"\n', 'model = "o3"\n\n[tui]\nnotifications = true\n']
)
def test_codex_without_servers_gets_a_block_at_the_end_and_loses_it_again(text: str) -> None:
    codex = client("codex")
    new = codex.connect(text, SERVERS, "user", PLACE, WHERE)
    assert new.startswith(text.rstrip("\n"))
    assert set(tomlkit.parse(new)["mcp_servers"]) == {"memories", "urchin"}
    assert codex.disconnect(new, "user", PLACE, WHERE) == text


def test_an_older_entry_of_ours_is_updated_in_place() -> None:
    old = CURSOR.replace(
        '"mcpServers": {',
        '"mcpServers": {\n    "memories": {"command": "/old/memories", "args": ["mcp"]},',
    )
    new = client("cursor").connect(old, SERVERS, "user", PLACE, WHERE)
    entry = JsoncDocument(new).get(["mcpServers", "memories"])
    assert entry["command"] == "/opt/bin/memories"
    assert '"browser": {' in new


@pytest.mark.parametrize("name", ["cursor", "codex"])
def test_a_foreign_server_with_our_name_is_refused_and_kept(name: str) -> None:
    if name == "codex":
        text = '[mcp_servers.memories]\ncommand = "npx"\nargs = ["-y", "other-memories-mcp"]\n'
    else:
        text = '{"mcpServers": {"memories": {"command": "npx", "args": ["-y", "mem0"]}}}'
    adapter = client(name)
    with pytest.raises(ForeignEntryError) as caught:
        adapter.connect(text, SERVERS, "user", PLACE, WHERE)
    assert "not ours" in caught.value.message
    # Disconnect leaves it alone too.
    assert adapter.disconnect(text, "user", PLACE, WHERE) == text


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("claude-code", '{"mcpServers": {"a": 1,}'),
        ("claude-code", "[1, 2]"),
        ("cursor", '{"mcpServers": []}'),
        ("gemini", '{"mcpServers": {"a": {}}, "mcpServers": {}}'),
        ("vscode", "{ /* unterminated"),
        ("opencode", '{"mcp": "nope"}'),
        ("codex", "[mcp_servers\ncommand = 1\n"),
        ("codex", 'mcp_servers = "text"\n'),
        ("codex", 'mcp_servers = { a = { command = "x" } }\n'),
    ],
)
def test_malformed_configs_are_refused(name: str, text: str) -> None:
    adapter = client(name)
    scope = adapter.scopes[0]
    with pytest.raises(UnreadableConfigError) as caught:
        adapter.connect(text, SERVERS, scope, PLACE, WHERE)
    assert "nothing was changed" in caught.value.message


def test_scopes_each_client_has() -> None:
    assert client("claude-code").scopes == ("user", "project", "local")
    assert client("codex").scopes == ("user",)
    for name in ("cursor", "opencode", "gemini", "vscode"):
        assert client(name).scopes == ("user", "project")
    with pytest.raises(UnknownScopeError):
        client("codex").target("project", PLACE)
    assert set(CLIENT_NAMES) == {"claude-code", "codex", "cursor", "opencode", "gemini", "vscode"}


def test_config_locations() -> None:
    env_place = Place(
        home=HOME,
        project=PLACE.project,
        env={"XDG_CONFIG_HOME": "/x/config", "CODEX_HOME": "/x/codex"},
    )
    paths = {
        (name, scope): str(client(name).target(scope, env_place).path)  # type: ignore[arg-type]
        for name in CLIENT_NAMES
        for scope in client(name).scopes
    }
    assert paths == {
        ("claude-code", "user"): "/home/ada/.claude.json",
        ("claude-code", "local"): "/home/ada/.claude.json",
        ("claude-code", "project"): "/home/ada/src/shop/.mcp.json",
        ("codex", "user"): "/x/codex/config.toml",
        ("cursor", "user"): "/home/ada/.cursor/mcp.json",
        ("cursor", "project"): "/home/ada/src/shop/.cursor/mcp.json",
        ("opencode", "user"): "/x/config/opencode/opencode.json",
        ("opencode", "project"): "/home/ada/src/shop/opencode.json",
        ("gemini", "user"): "/home/ada/.gemini/settings.json",
        ("gemini", "project"): "/home/ada/src/shop/.gemini/settings.json",
        ("vscode", "user"): "/x/config/Code/User/mcp.json",
        ("vscode", "project"): "/home/ada/src/shop/.vscode/mcp.json",
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude-code", "${HOME}/.local/share/memories/clients/x.token"),
        ("cursor", "${userHome}/.local/share/memories/clients/x.token"),
        ("vscode", "${userHome}/.local/share/memories/clients/x.token"),
        ("gemini", "${HOME}/.local/share/memories/clients/x.token"),
        ("opencode", "{env:HOME}/.local/share/memories/clients/x.token"),
    ],
)
def test_a_shared_file_names_the_token_file_through_the_clients_home_variable(
    name: str, expected: str
) -> None:
    adapter = client(name)
    shared = adapter.target("project", PLACE)
    assert shared.shared
    assert token_reference(adapter, shared, TOKEN, HOME) == expected
    user = adapter.target("user", PLACE)
    assert token_reference(adapter, user, TOKEN, HOME) == str(TOKEN)


def test_connection_names_per_scope() -> None:
    claude = client("claude-code")
    assert connection_id(claude, "user", PLACE) == "claude-code"
    project = connection_id(claude, "project", PLACE)
    local = connection_id(claude, "local", PLACE)
    for name, scope in ((project, "project"), (local, "local")):
        prefix = f"claude-code-{scope}-shop-"
        assert name.startswith(prefix) and len(name) == len(prefix) + 8
    # Same folder, same name; another folder of the same name, another name.
    assert connection_id(claude, "project", PLACE) == project
    elsewhere = Place(home=PLACE.home, project=PLACE.project.parent / "b" / "shop", env={})
    assert connection_id(claude, "project", elsewhere) != project
    long = Place(home=PLACE.home, project=PLACE.project.parent / ("x" * 90), env={})
    assert len(grant_name(connection_id(claude, "project", long), "host")) <= 64


def test_context_hook_goes_in_next_to_other_hooks_and_out_again() -> None:
    settings = """\
{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
    ]
  }
}
"""
    new = add_context_hook(settings, "memories", WHERE)
    groups = json.loads(new)["hooks"]["SessionStart"]
    assert groups[0]["hooks"][0]["command"] == "echo hi"
    assert groups[1] == {
        "matcher": "startup|resume|clear|compact",
        "hooks": [{"type": "command", "command": "memories context", "timeout": 10}],
    }
    assert add_context_hook(new, "memories", WHERE) == new
    assert remove_context_hook(new, WHERE) == settings
    fresh = add_context_hook(None, "/opt/my bin/memories", WHERE)
    command = json.loads(fresh)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == "'/opt/my bin/memories' context"
    assert json.loads(remove_context_hook(fresh, WHERE)) == {}


def test_servers_carry_no_token() -> None:
    for server in SERVERS:
        assert isinstance(server, Server)
        assert all(
            "token" not in arg or arg.endswith((".token", "--token-file")) for arg in server.args
        )


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_0123456789", min_size=1, max_size=10)
_entries = st.fixed_dictionaries(
    {"command": st.text(max_size=10), "args": st.lists(st.text(max_size=6), max_size=3)}
)
_other_servers = st.dictionaries(_names.filter(lambda n: n not in OUR_NAMES), _entries, max_size=4)


@given(
    st.sampled_from([name for name, _, _, _ in JSON_CASES]),
    _other_servers,
    st.dictionaries(_names, st.integers() | st.text(max_size=5), max_size=3),
    st.sampled_from([None, 2, 4, "\t"]),
)
def test_any_json_config_round_trips(
    name: str, others: dict[str, Any], extra: dict[str, Any], indent: int | str | None
) -> None:
    adapter = client(name)
    key = {"vscode": "servers", "opencode": "mcp"}.get(name, "mcpServers")
    document = {**{k: v for k, v in extra.items() if k != key}, key: others}
    text = json.dumps(document, indent=indent)
    new = adapter.connect(text, SERVERS, "user", PLACE, WHERE)
    assert adapter.connect(new, SERVERS, "user", PLACE, WHERE) == new
    value = JsoncDocument(new).value
    assert {k: v for k, v in value[key].items() if k not in OUR_NAMES} == others
    assert adapter.disconnect(new, "user", PLACE, WHERE) == text


@example({"0": {"command": "\x85", "args": []}}, False)  # a line break only to splitlines
@example({"x": {"command": "a\u2028b\x0cc", "args": ["\x1c"]}}, True)
@given(_other_servers, st.booleans())
def test_any_codex_config_round_trips(others: dict[str, Any], comment: bool) -> None:
    codex = client("codex")
    text = ("# top\n" if comment else "") + tomlkit.dumps({"model": "o3", "mcp_servers": others})
    new = codex.connect(text, SERVERS, "user", PLACE, WHERE)
    assert codex.connect(new, SERVERS, "user", PLACE, WHERE) == new
    parsed = tomlkit.parse(new).unwrap()
    assert {k: v for k, v in parsed["mcp_servers"].items() if k not in OUR_NAMES} == others
    restored = codex.disconnect(new, "user", PLACE, WHERE)
    assert restored == text
