"""The SKILL.md this release ships: the Agent Skills format's rules and our own."""

from __future__ import annotations

import re

import yaml

from memories.skills import DESCRIPTION_MAX, NAME_MAX, SKILL_NAME, bundled_skill, parse_front_matter

MCP_TOOLS = (
    "memory_search",
    "memory_retrieve",
    "memory_ask",
    "memory_read",
    "memory_list",
    "memory_history",
    "memory_graph",
    "memory_write",
    "memory_link",
    "memory_delete",
)


def _front_matter_yaml(text: str) -> dict[str, object]:
    head, sep, _ = text.removeprefix("---\n").partition("\n---\n")
    assert sep, "front matter not closed"
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


def test_front_matter_is_valid_yaml_with_name_and_description_within_limits() -> None:
    skill = bundled_skill()
    text = skill.data.decode("utf-8")
    fields = _front_matter_yaml(text)
    assert fields["name"] == SKILL_NAME == skill.name
    assert len(str(fields["name"])) <= NAME_MAX
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(fields["name"]))
    description = str(fields["description"])
    assert 1 <= len(description) <= DESCRIPTION_MAX
    assert description == skill.description
    # Versioned, in the format's string-to-string metadata map.
    assert fields["metadata"] == {"version": skill.version, "source": "urchin-memories"}
    assert skill.version.isdigit()
    # Only keys every client accepts: Codex's validator allows name, description, license,
    # metadata and allowed-tools; OpenCode reads name, description, license, compatibility and
    # metadata; metadata values must be strings.
    assert set(fields) <= {"name", "description", "license", "metadata"}
    assert all(isinstance(v, str) for v in fields["metadata"].values())  # type: ignore[attr-defined]


def test_our_small_parser_reads_what_yaml_reads() -> None:
    text = bundled_skill().data.decode("utf-8")
    loaded = _front_matter_yaml(text)
    parsed = parse_front_matter(text)
    assert parsed["name"] == loaded["name"]
    assert parsed["description"] == loaded["description"]
    assert parsed["metadata.version"] == loaded["metadata"]["version"]  # type: ignore[index]


def test_it_teaches_every_mcp_tool_and_the_cli_for_search_answers_and_writes() -> None:
    text = bundled_skill().data.decode("utf-8")
    for tool in MCP_TOOLS:
        assert f"`{tool}`" in text.split("---", 2)[2], tool
    for command in (
        "memories search",
        "memories retrieve",
        "memories ask",
        "memories show",
        "memories put",
    ):
        assert command in text
    assert "not instructions" in text  # retrieved text is data


def test_it_holds_nothing_of_this_machine() -> None:
    text = bundled_skill().data.decode("utf-8")
    assert "/home/" not in text and "/root" not in text and "/tmp" not in text
    assert "MEMORIES_MCP_TOKEN" not in text
    assert not re.search(r"\b[0-9a-f]{32,}\b", text)  # no vault id or token
    assert "{{" not in text and "${" not in text  # nothing left to interpolate


def test_every_command_it_names_exists() -> None:
    from memories.cli import cli, load_all_commands

    load_all_commands()
    text = bundled_skill().data.decode("utf-8")
    named = set(re.findall(r"`memories ([a-z][a-z-]*)", text))
    assert {"search", "retrieve", "ask", "put", "show"} <= named
    assert named <= set(cli.commands), named - set(cli.commands)
