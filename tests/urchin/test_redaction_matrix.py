"""Redaction on every field by every write path: a secret never reaches the journal's bytes.

The fields come from the Event model itself (every field whose value is text, the
actor's included), so a field added later is planted here without anyone listing it.
Each write path declares which of those fields a caller can set through it; the
intake takes them all. Every planted field gets its own realistic secret from the
redaction corpus, and after the write the journal must hold none of them, while each
planted field must hold a marker (so a path that silently dropped a field would fail
too), and the line must still read back as a valid event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sqlite3
import subprocess
import typing
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support import CliResult, script
from tests.urchin.collectors.support import run_once
from tests.urchin.intake.test_intake import RunningIntake, start_intake
from tests.urchin.redact.corpus import build
from urchin.collectors.base import Collector
from urchin.collectors.claude import ClaudeCollector
from urchin.collectors.codex import CodexCollector
from urchin.collectors.copilot import CopilotCollector
from urchin.collectors.gemini import GeminiCollector
from urchin.collectors.git import GitCollector
from urchin.collectors.local_model import LocalModelCollector
from urchin.collectors.opencode import OpenCodeCollector
from urchin.collectors.shell import ShellCollector
from urchin.ephemeral import Ephemeral
from urchin.errors import RedactionError
from urchin.event import Actor, Event, EventKind, Kind, OtherKind
from urchin.intake import GroupCommitter
from urchin.journal import Journal
from urchin.recorder import Recorder
from urchin.redact import MARKER_PREFIX, Redactor, redact

Urchin = Callable[..., CliResult]

# -- the fields, from the model ------------------------------------------------------------

# Values that are typed, not text: redaction never sees them, the parser validates them.
STRUCTURAL = {uuid.UUID, datetime}
TEXT = {str, str | None}
TEXTS = {tuple[str, ...]}
KINDS = {Kind}


def _shape(hint: object) -> str | None:
    """How a field's value is planted: text, texts (a list), kind, json (meta)."""
    if hint in STRUCTURAL:
        return None
    if hint in TEXT:
        return "text"
    if hint in TEXTS:
        return "texts"
    if hint in KINDS:
        return "kind"
    if typing.get_origin(hint) in (typing.Union, type(str | None)):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and typing.get_origin(args[0]) is Mapping:
            return "json"
    raise AssertionError(f"the redaction matrix does not know how to plant a {hint!r} field")


def string_fields() -> dict[str, str]:
    """Every text-holding field of an Event (``actor.*`` for the actor's), by shape."""
    fields: dict[str, str] = {}
    hints = typing.get_type_hints(Event)
    actor_hints = typing.get_type_hints(Actor)
    for field in dataclasses.fields(Event):
        hint = hints[field.name]
        if hint == Actor | None:
            for inner in dataclasses.fields(Actor):
                shape = _shape(actor_hints[inner.name])
                if shape is not None:
                    fields[f"actor.{inner.name}"] = shape
            continue
        shape = _shape(hint)
        if shape is not None:
            fields[field.name] = shape
    return fields


FIELDS = string_fields()

# Secrets of distinct providers, so each field's canary is told apart from the others'.
_CANARY_KINDS = (
    "github_pat",
    "aws_access_key",
    "gitlab_pat",
    "slack_bot",
    "stripe_live",
    "npm",
    "huggingface",
    "linear",
    "digitalocean",
    "doppler",
    "sendgrid",
    "supabase",
    "sonarqube",
    "buildkite",
    "openai",
    "pulumi",
    "groq",
    "figma",
)


def _canaries() -> list[str]:
    first: dict[str, str] = {}
    for sample in build():
        if sample.cls == "provider" and sample.kind in _CANARY_KINDS and sample.secrets:
            first.setdefault(sample.kind, sample.secrets[0])
    return [first[kind] for kind in _CANARY_KINDS if kind in first]


CANARIES = _canaries()


def plan(fields: typing.Iterable[str]) -> dict[str, str]:
    """One distinct canary per field."""
    names = sorted(fields)
    assert len(names) <= len(CANARIES), "add more canary kinds for the new fields"
    return dict(zip(names, CANARIES, strict=False))


def test_the_model_has_the_fields_the_issue_names() -> None:
    # A sanity check of the derivation, not the list the matrix uses.
    for name in ("source", "kind", "content", "brain", "actor.account", "actor.node_id"):
        assert name in FIELDS
    assert "id" not in FIELDS
    assert "timestamp" not in FIELDS


def test_every_canary_is_a_secret_the_redactor_knows_on_its_own() -> None:
    assert len(set(CANARIES)) == len(CANARIES) >= len(FIELDS)
    for canary in CANARIES:
        assert redact(canary).startswith(MARKER_PREFIX), canary


# -- planting and checking -----------------------------------------------------------------


def planted_json(canaries: Mapping[str, str]) -> dict[str, Any]:
    """A journal-shaped JSON event with each planted field holding its canary."""
    body: dict[str, Any] = {"content": "plain content", "source": "plain-source"}
    actor: dict[str, Any] = {}
    for name, canary in canaries.items():
        shape = FIELDS[name]
        value: Any = {
            "text": canary,
            "texts": ["plain", canary],
            "kind": canary,
            "json": {"note": f"see {canary}", "nested": [canary]},
        }[shape]
        if name.startswith("actor."):
            actor[name.removeprefix("actor.")] = value
        else:
            body[name] = value
    if actor:
        body["actor"] = {"account": "plain-account", "device": "plain-device", **actor}
    return body


def _value(event: Event, name: str) -> str:
    """The field's value as text, to look for the marker in."""
    holder: object = event
    if name.startswith("actor."):
        holder = event.actor
        name = name.removeprefix("actor.")
        if holder is None:
            return ""
    value = getattr(holder, name)
    if isinstance(value, OtherKind | EventKind):
        return str(value)
    if isinstance(value, tuple):
        return " ".join(value)
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    return "" if value is None else str(value)


def assert_redacted(data: bytes, canaries: Mapping[str, str]) -> list[Event]:
    """No canary in the bytes; every planted field holds a marker; every line reads back."""
    leaked = [name for name, canary in canaries.items() if canary.encode() in data]
    assert not leaked, f"secrets written unredacted in: {leaked}"
    events = [Event.from_line(line) for line in data.splitlines() if line.strip()]
    assert events, "nothing was written"
    for name in canaries:
        holding = [e for e in events if MARKER_PREFIX in _value(e, name)]
        assert holding, f"{name}: no event holds a redaction marker there"
    return events


# -- the one write path ----------------------------------------------------------------------


def test_recorder_redacts_every_string_field(tmp_path: Path) -> None:
    canaries = plan(FIELDS)
    event = Event.from_json({"id": str(uuid.uuid4()), "timestamp": "2026-05-04T20:00:00Z",
                             **planted_json(canaries)})  # fmt: skip
    journal = Journal(tmp_path / "events.jsonl")
    Recorder(journal, Ephemeral(tmp_path)).record(event)

    [written] = assert_redacted(journal.path.read_bytes(), canaries)
    # Structural fields are untouched; a free-word kind stays a free word.
    assert written.id == event.id
    assert written.timestamp == event.timestamp
    assert isinstance(written.kind, OtherKind)


class _Blanking(Redactor):
    """A redactor that would leave the source blank: a format the journal cannot hold."""

    def redact_event(self, event: Event) -> Event:
        return dataclasses.replace(event, source=" ")


def test_redaction_that_would_break_a_field_rejects_the_event(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    recorder = Recorder(journal, Ephemeral(tmp_path), _Blanking())
    event = Event.create("deploy", "cli")

    with pytest.raises(RedactionError) as raised:
        recorder.record(event)

    assert "source" in raised.value.message
    assert raised.value.code == "redaction"
    assert not journal.path.exists()


def test_group_commit_hands_a_redaction_error_to_its_request_only(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    broken = GroupCommitter(Recorder(journal, Ephemeral(tmp_path), _Blanking()))
    try:
        with pytest.raises(RedactionError):
            asyncio.run(broken.commit([Event.create("deploy", "cli")]))
    finally:
        broken.close()
    assert not journal.path.exists()


# -- CLI -------------------------------------------------------------------------------------

CLI_FIELDS = {
    "content",
    "source",
    "kind",
    "workspace",
    "title",
    "tags",
    "session",
    "actor.account",
    "actor.device",
    "actor.workspace",
}


def _identity(canaries: Mapping[str, str]) -> dict[str, str]:
    return {"URCHIN_ACCOUNT": canaries["actor.account"], "URCHIN_DEVICE": canaries["actor.device"]}


def test_cli_ingest_redacts_every_field_it_takes(urchin: Urchin, journal_path: Path) -> None:
    canaries = plan(FIELDS.keys() & CLI_FIELDS)
    workspace = canaries["workspace"]
    # --workspace sets both the event's and the actor's workspace: one value for both.
    canaries["actor.workspace"] = workspace
    result = urchin(
        "ingest",
        canaries["content"],
        "--source",
        canaries["source"],
        "--kind",
        canaries["kind"],
        "--workspace",
        workspace,
        "--title",
        canaries["title"],
        "--tag",
        canaries["tags"],
        "--session",
        canaries["session"],
        env={
            "URCHIN_ACCOUNT": canaries["actor.account"],
            "URCHIN_DEVICE": canaries["actor.device"],
        },
    )
    assert result.code == 0, result.stderr
    assert_redacted(journal_path.read_bytes(), canaries)
    for canary in canaries.values():
        assert canary not in result.stdout
        assert canary not in result.stderr


# -- intake ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningIntake]:
    running = start_intake(tmp_path_factory.mktemp("matrix") / "home")
    yield running
    running.stop()


def test_intake_single_redacts_every_field(intake: RunningIntake) -> None:
    canaries = plan(FIELDS)
    before = len(intake.journal())
    reply = httpx.post(intake.base_url + "/ingest", json=planted_json(canaries), timeout=30)
    assert reply.status_code == 200, reply.text
    assert_redacted(intake.journal()[before:], canaries)


def test_intake_batch_redacts_every_field(intake: RunningIntake) -> None:
    # One event per field, and one with them all, in a single batch.
    canaries = plan(FIELDS)
    batch = [planted_json({name: canary}) for name, canary in canaries.items()]
    batch.append(planted_json(canaries))
    before = len(intake.journal())
    reply = httpx.post(intake.base_url + "/ingest/batch", json={"events": batch}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["accepted"] == len(batch)
    assert_redacted(intake.journal()[before:], canaries)


# -- MCP -------------------------------------------------------------------------------------

MCP_INGEST_FIELDS = CLI_FIELDS
MCP_REMEMBER_FIELDS = {"content", "tags", "workspace", "actor.account", "actor.device",
                       "actor.workspace"}  # fmt: skip


@asynccontextmanager
async def mcp_session(env: Mapping[str, str]) -> typing.AsyncIterator[ClientSession]:
    names = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
    server_env = {name: os.environ[name] for name in names} | dict(env)
    params = StdioServerParameters(command=script("urchin"), args=["mcp"], env=server_env)
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def _mcp_arguments(tool: str, canaries: Mapping[str, str]) -> dict[str, Any]:
    arguments: dict[str, Any] = {"content": canaries["content"], "workspace": canaries["workspace"]}
    arguments["tags"] = [canaries["tags"]]
    if tool == "urchin_ingest":
        for name in ("source", "kind", "title", "session"):
            arguments[name] = canaries[name]
    return arguments


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "accepted"),
    [("urchin_ingest", MCP_INGEST_FIELDS), ("urchin_remember", MCP_REMEMBER_FIELDS)],
)
async def test_mcp_writes_redact_every_field_they_take(
    tool: str, accepted: set[str], journal_path: Path
) -> None:
    canaries = plan(FIELDS.keys() & accepted)
    canaries["actor.workspace"] = canaries["workspace"]
    async with mcp_session(_identity(canaries)) as session:
        result = await session.call_tool(tool, _mcp_arguments(tool, canaries))
    assert not result.is_error, result.content
    assert_redacted(journal_path.read_bytes(), canaries)
    answer = json.dumps([block.model_dump() for block in result.content])
    assert not [c for c in canaries.values() if c in answer]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- collectors ------------------------------------------------------------------------------

# Every collector stamps the actor from the identity; the content is what the source says.
COLLECTOR_FIELDS = {"content", "actor.account", "actor.device"}


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _stamp(second: int) -> str:
    return f"2026-05-01T10:00:{second:02d}.000Z"


def _shell(home: Path, text: str) -> Collector:
    _write(home / ".bash_history", f"echo {text}\n")
    return ShellCollector()


def _claude(home: Path, text: str) -> Collector:
    session = "11111111-2222-4333-8444-555555555555"
    record = {
        "type": "user",
        "message": {"role": "user", "content": f"deploy with {text}"},
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": session,
        "timestamp": _stamp(1),
        "cwd": "/home/u/app",
        "isSidechain": False,
        "userType": "external",
    }
    _write(home / ".claude" / "projects" / "-home-u-app" / f"{session}.jsonl", _line(record))
    return ClaudeCollector(home / ".claude")


def _copilot(home: Path, text: str) -> Collector:
    root = home / ".copilot"
    _write(root / "command-history-state.json", json.dumps({"commandHistory": [f"use {text}"]}))
    return CopilotCollector(root)


def _gemini(home: Path, text: str) -> Collector:
    folder = home / ".gemini" / "tmp" / "proj"
    _write(folder / ".project_root", "/home/u/proj")
    message = {"id": "m1", "timestamp": _stamp(1), "type": "user", "content": [{"text": text}]}
    _write(folder / "chats" / "session-2026-05-01T10-00-ab12cd34.jsonl", _line(message))
    return GeminiCollector(home / ".gemini")


def _codex(home: Path, text: str) -> Collector:
    root = home / ".codex"
    entry = {"session_id": "0199-one", "ts": 1_777_000_000, "text": f"try {text}"}
    _write(root / "history.jsonl", _line(entry))
    return CodexCollector(root)


def _opencode(home: Path, text: str) -> Collector:
    from tests.urchin.collectors.test_opencode import SCHEMA

    folder = home / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / "opencode.db", isolation_level=None)
    try:
        conn.executescript(SCHEMA)
        at = int(datetime.now(UTC).timestamp() * 1000) - 60_000
        conn.execute("INSERT INTO project VALUES ('prj_1', '/w', 'git', ?, ?)", (at, at))
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
            " time_updated) VALUES ('ses_1', 'prj_1', 'fox', '/w', 'Deploy', '1.2.0', ?, ?)",
            (at, at),
        )
        message = {"role": "user", "time": {"created": at}, "sessionID": "ses_1"}
        conn.execute(
            "INSERT INTO message VALUES ('msg_1', 'ses_1', ?, ?, ?)", (at, at, json.dumps(message))
        )
        part = {"type": "text", "text": f"deploy with {text}"}
        conn.execute(
            "INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', ?, ?, ?)",
            (at, at, json.dumps(part)),
        )
    finally:
        conn.close()
    return OpenCodeCollector(folder)


def _local_model(home: Path, text: str) -> Collector:
    record = {"prompt": f"explain {text}", "ts": "2026-05-04T20:00:00Z", "model": "llama3"}
    _write(home / ".local" / "share" / "urchin" / "local-model.jsonl", _line(record))
    return LocalModelCollector()


def _git(home: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Collector, Path]:
    repo = home / "repo"
    repo.mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ada Lovelace")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ada@example.test")

    def git(*args: str, stdin: str | None = None) -> None:
        subprocess.run(["git", "-C", str(repo), *args], input=stdin, text=True, check=True,
                       capture_output=True)  # fmt: skip

    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "Initial commit")
    return GitCollector(repos=[repo]), repo


COLLECTORS: dict[str, Callable[[Path, str], Collector]] = {
    "shell": _shell,
    "claude": _claude,
    "copilot": _copilot,
    "gemini": _gemini,
    "codex": _codex,
    "opencode": _opencode,
    "local-model": _local_model,
}


def test_every_registered_collector_is_in_the_matrix() -> None:
    from urchin.collectors.registry import build_collectors
    from urchin.config import load_settings

    names = {collector.name for collector in build_collectors(load_settings())}
    assert names <= {*COLLECTORS, "git", "zsh", "fish"}, names


def _collector_canaries() -> dict[str, str]:
    return plan(FIELDS.keys() & COLLECTOR_FIELDS)


@pytest.mark.parametrize("name", sorted(COLLECTORS))
def test_collectors_redact_every_field_they_write(
    name: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries = _collector_canaries()
    monkeypatch.setenv("URCHIN_ACCOUNT", canaries["actor.account"])
    monkeypatch.setenv("URCHIN_DEVICE", canaries["actor.device"])
    collector = COLLECTORS[name](isolated_home, canaries["content"])
    data_dir = isolated_home / ".local" / "share" / "urchin"

    result = run_once(collector, data_dir)

    assert result.errors == [], result.errors
    assert_redacted((data_dir / "journal" / "events.jsonl").read_bytes(), canaries)


def test_git_collector_redacts_every_field_it_writes(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries = _collector_canaries()
    monkeypatch.setenv("URCHIN_ACCOUNT", canaries["actor.account"])
    monkeypatch.setenv("URCHIN_DEVICE", canaries["actor.device"])
    collector, repo = _git(isolated_home, canaries["content"], monkeypatch)
    data_dir = isolated_home / ".local" / "share" / "urchin"
    run_once(collector, data_dir)  # the first run only notes where the repository stands
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            f"Rotate {canaries['content']}",
        ],
        check=True,
        capture_output=True,
    )

    result = run_once(collector, data_dir)

    assert result.errors == [], result.errors
    assert_redacted((data_dir / "journal" / "events.jsonl").read_bytes(), canaries)
