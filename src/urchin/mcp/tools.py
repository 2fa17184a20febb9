"""The ten tools of ``urchin mcp``: their typed arguments, their answers, their work.

The tools read and write the same journal as every other urchin process; there is
no daemon in between. :mod:`urchin.mcp.server` registers them with the SDK.

Contracts the tools keep:

- stdout carries nothing but the protocol; logging goes to stderr and never
  includes event bodies.
- Every argument has a typed, bounded schema, and a value the schema does not
  allow is rejected: no ``true`` or ``"5"`` for a number, no JSON text for a
  list, no unknown arguments. A failure is *raised* (the client sees ``isError``) with a message
  that names the argument and the rule, never the rejected value.
- Results are compact JSON: ``id, timestamp, source, kind, workspace, title,
  content`` per event, content cut to CONTENT_CHARS (``truncated: true``) and the
  whole list capped at TOTAL_CONTENT_CHARS (``omitted`` says how many were left out).
- Start-up loads the SDK and nothing heavy of urchin: the journal queries, the
  index, reflection and ranking are imported by the first tool that needs them,
  so an agent's first answer waits only for what the SDK itself costs.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from urchin import __version__
from urchin.errors import UrchinError, UsageError
from urchin.event import Event, EventKind, format_timestamp

if TYPE_CHECKING:
    from urchin.config import Settings
    from urchin.identity import Identity
    from urchin.recall.reflect import Reflection
    from urchin.recorder import Recorder

__all__ = ["CONTENT_CHARS", "TOOL_NAMES", "UrchinTools", "compact_event"]

log = logging.getLogger(__name__)

#: Characters of an event's content shown in a result before it is cut.
CONTENT_CHARS = 500
TITLE_CHARS = 200
#: Characters of content across one result; further events are omitted.
TOTAL_CONTENT_CHARS = 60_000
#: Newest events of a window that reflection and semantic search look at.
WINDOW_SCAN = 5_000
MAX_HOURS = 24 * 365 * 10
MAX_LIMIT = 200
MAX_CONTENT = 1_000_000
MAX_TAGS = 32

TOOL_NAMES = (
    "urchin_status",
    "urchin_ingest",
    "urchin_recent_activity",
    "urchin_project_context",
    "urchin_search",
    "urchin_workspace_context",
    "urchin_remember",
    "urchin_ephemeral",
    "urchin_agent_reflect",
    "urchin_semantic_search",
)

# -- argument types -----------------------------------------------------------------------


def _json_integer(value: object) -> object:
    """An integer as JSON Schema means it: no boolean, no string; 5.0 is 5."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _json_number(value: object) -> object:
    """A number as JSON Schema means it: no boolean, no string."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("float_type", "Input should be a valid number")
    return value


# pydantic's lax mode would read true as 1 and "5" as 5; the advertised schema says number.
Hours = Annotated[
    float,
    # Constraints before the validator: the other way round pydantic leaves them out of
    # the JSON schema.
    Field(gt=0, le=MAX_HOURS, description="Look back this many hours (more than 0)."),
    BeforeValidator(_json_number),
]
Limit = Annotated[
    int,
    Field(ge=1, le=MAX_LIMIT, description="Most events to return."),
    BeforeValidator(_json_integer),
]
Tag = Annotated[str, Field(min_length=1, max_length=100)]
Tags = Annotated[
    tuple[Tag, ...], Field(max_length=MAX_TAGS, description="Tags for the event (at most 32).")
]
Content = Annotated[
    str,
    Field(min_length=1, max_length=MAX_CONTENT, description="The text to record (not blank)."),
]
Workspace = Annotated[
    str, Field(max_length=4096, description="Absolute path of the repository or project folder.")
]

# -- results ------------------------------------------------------------------------------


def compact_event(event: Event, content_chars: int = CONTENT_CHARS) -> dict[str, Any]:
    """An event as a result item; long content is cut and flagged ``truncated``."""
    out: dict[str, Any] = {
        "id": str(event.id),
        "timestamp": format_timestamp(event.timestamp),
        "source": event.source,
        "kind": str(event.kind),
    }
    if event.workspace:
        out["workspace"] = event.workspace
    if event.title:
        out["title"] = event.title[:TITLE_CHARS]
    if event.tags:
        out["tags"] = list(event.tags)
    if len(event.content) > content_chars:
        out["content"] = event.content[:content_chars]
        out["truncated"] = True
    else:
        out["content"] = event.content
    return out


def _bounded(items: Iterable[tuple[Event, dict[str, Any]]]) -> tuple[list[dict[str, Any]], int]:
    """Compact events (with extra fields) until the total content budget is spent."""
    shown: list[dict[str, Any]] = []
    omitted = 0
    budget = TOTAL_CONTENT_CHARS
    for event, extra in items:
        item = {**compact_event(event), **extra}
        cost = len(item["content"])
        if omitted or (shown and cost > budget):
            omitted += 1
            continue
        budget -= cost
        shown.append(item)
    return shown, omitted


def _listing(events: Sequence[Event], **fields: Any) -> dict[str, Any]:
    shown, omitted = _bounded((event, {}) for event in events)
    payload: dict[str, Any] = {**fields, "count": len(shown), "events": shown}
    if omitted:
        payload["omitted"] = omitted
        payload["note"] = (
            f"{omitted} more events left out to keep the answer small; narrow the query"
        )
    return payload


def _result(payload: Mapping[str, Any]) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


P = ParamSpec("P")
R = TypeVar("R")


def _reported(func: Callable[P, R]) -> Callable[P, R]:
    """Raise urchin's own errors as tool errors, so the client gets ``isError`` and the message."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except UrchinError as exc:
            raise ToolError(exc.message) from exc

    return wrapper


def _required(value: str, name: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise UsageError(f"{name} must not be blank")
    return stripped


# -- the tools ----------------------------------------------------------------------------


class UrchinTools:
    """The ten tools, bound to one journal, flag file and identity."""

    def __init__(self, settings: Settings, identity: Identity) -> None:
        """Raises ConfigError when a configured redaction pattern is invalid."""
        from urchin.recorder import Recorder

        self.settings = settings
        self.identity = identity
        self.recorder: Recorder = Recorder.from_settings(settings, durable=True)
        self.journal = self.recorder.journal
        self.flag = self.recorder.ephemeral

    def _record(self, event: Event) -> dict[str, Any]:
        from urchin.recorder import Outcome

        # The recorder redacts secrets and honours ephemeral mode and .urchinignore.
        outcome = self.recorder.record(event)
        answer: dict[str, Any] = {"id": str(event.id), "status": outcome.value}
        match outcome:
            case Outcome.DROPPED:
                answer["reason"] = "ephemeral"
            case Outcome.IGNORED:
                answer["reason"] = "workspace ignored by an urchinignore file"
            case Outcome.OK:
                pass
        return answer

    @_reported
    def status(self) -> CallToolResult:
        """Journal health: event count, last event, paths, identity, ephemeral mode."""
        from urchin import query as journal_query

        newest = journal_query.recent(self.journal, 1)
        settings = self.settings
        return _result(
            {
                "events": newest.matched,
                "last_event": compact_event(newest.events[0], 200) if newest.events else None,
                "skipped_malformed": newest.malformed,
                "journal": str(self.journal.path),
                "journal_bytes": self.journal.size(),
                "data_dir": str(settings.data_dir),
                "intake_port": settings.intake_port,
                "vault_root": str(settings.vault_root),
                "identity": {"account": self.identity.account, "device": self.identity.device},
                "ephemeral": self.flag.status().to_json(),
                "chat": "configured" if settings.chat_url else "off",
                "embedder": "configured" if settings.embedder_url else "off",
                "version": __version__,
            }
        )

    @_reported
    def ingest(
        self,
        content: Content,
        workspace: Annotated[Workspace, Field(min_length=1)],
        source: Annotated[
            str, Field(min_length=1, max_length=100, description="Where the event comes from.")
        ] = "mcp",
        title: Annotated[str, Field(max_length=500, description="Optional short title.")] = "",
        kind: Annotated[
            str,
            Field(
                min_length=1,
                max_length=64,
                description="conversation, agent, command, commit, file, decision, or any word.",
            ),
        ] = "conversation",
        tags: Tags = (),
        session: Annotated[
            str, Field(max_length=200, description="Optional session id to group events by.")
        ] = "",
    ) -> CallToolResult:
        """Record one event in the journal; known secret shapes are redacted first. Returns its
        id and status: "ok", "dropped" (ephemeral mode is on) or "ignored" (the workspace is
        listed in an urchinignore file)."""
        workspace = _required(workspace, "workspace")
        event = Event.create(
            content,
            _required(source, "source"),
            _required(kind, "kind"),
            workspace=workspace,
            session=session.strip(),
            title=title.strip(),
            tags=tags,
            actor=self.identity.actor(workspace),
        )
        return _result(self._record(event))

    @_reported
    def recent_activity(
        self,
        hours: Hours = 24,
        source: Annotated[
            str, Field(max_length=100, description="Only events from this source, e.g. 'claude'.")
        ] = "",
        limit: Limit = 20,
    ) -> CallToolResult:
        """Recent events across all sources, newest first."""
        from urchin import query as journal_query

        source_filter = source.strip() or None
        found = journal_query.recent(self.journal, limit, source_filter, hours)
        return _result(
            _listing(found.events, hours=hours, source=source_filter, matched=found.matched)
        )

    @_reported
    def project_context(
        self,
        project: Annotated[
            str, Field(min_length=1, max_length=200, description="Project name to look for.")
        ],
        hours: Hours = 168,
        limit: Limit = 30,
    ) -> CallToolResult:
        """Events that mention a project in their content, title, tags or workspace (any case),
        newest first."""
        from urchin import query as journal_query

        name = _required(project, "project")
        found = journal_query.search(self.journal, name, limit, None, hours)
        return _result(_listing(found.events, project=name, hours=hours, matched=found.matched))

    @_reported
    def search(
        self,
        query: Annotated[
            str, Field(min_length=1, max_length=500, description="Text to find (any case).")
        ],
        hours: Hours = 168,
        limit: Limit = 20,
    ) -> CallToolResult:
        """Case-insensitive substring search over content, title, tags and workspace,
        newest first."""
        from urchin import query as journal_query

        text = _required(query, "query")
        found = journal_query.search(self.journal, text, limit, None, hours)
        return _result(_listing(found.events, query=text, hours=hours, matched=found.matched))

    @_reported
    def workspace_context(
        self,
        path: Annotated[
            Workspace, Field(min_length=1, description="Workspace path; matched as a prefix.")
        ],
        hours: Hours = 168,
        limit: Limit = 40,
    ) -> CallToolResult:
        """Events whose workspace starts with the given path, newest first. Call it at the
        start of a session to load what happened in the current repository."""
        from urchin import query as journal_query

        prefix = _required(path, "path")
        if len(prefix) > 1:
            prefix = prefix.rstrip("/") or "/"
        found = journal_query.workspace_events(self.journal, prefix, limit, hours)
        return _result(_listing(found.events, path=prefix, hours=hours, matched=found.matched))

    @_reported
    def remember(
        self,
        content: Content,
        tags: Tags = (),
        workspace: Annotated[Workspace, Field(description="Optional workspace path.")] = "",
    ) -> CallToolResult:
        """Record a decision or note worth keeping (kind "decision", source "mcp")."""
        where = workspace.strip() or None
        event = Event.create(
            content,
            "mcp",
            EventKind.DECISION,
            workspace=where,
            tags=tags,
            actor=self.identity.actor(where),
        )
        return _result(self._record(event))

    @_reported
    def ephemeral(
        self,
        action: Annotated[
            Literal["start", "end", "status"],
            Field(
                description="start: discard every event from now on; end: record again; "
                "status: report."
            ),
        ],
    ) -> CallToolResult:
        """Burn mode: while on, every writer (MCP, intake, CLI, collectors) discards events,
        permanently."""
        match action:
            case "start":
                state = self.flag.start()
                message = "ephemeral mode is ON: events are discarded until action end"
            case "end":
                was_on = self.flag.end()
                state = self.flag.status()
                message = (
                    "ephemeral mode ended: events are recorded again"
                    if was_on
                    else "ephemeral mode was not on"
                )
            case "status":
                state = self.flag.status()
                message = "ephemeral mode is ON" if state.active else "ephemeral mode is off"
        return _result({"action": action, **state.to_json(), "message": message})

    @_reported
    def agent_reflect(
        self,
        goal: Annotated[
            str, Field(min_length=1, max_length=2000, description="What you are about to do.")
        ],
        hours: Hours = 24,
        limit: Annotated[
            int,
            Field(ge=1, le=100, description="Most relevant events to list."),
            BeforeValidator(_json_integer),
        ] = 30,
    ) -> CallToolResult:
        """Digest recent events that bear on a goal: counts by source and workspace,
        decisions, open threads (questions, TODOs, failures) and the most relevant events.
        Uses the configured chat model for a summary when there is one. The reflection is
        recorded as an "agent" event from source "urchin-agent"."""
        from urchin import query as journal_query
        from urchin.recall.reflect import reflect, reflection_event

        text = _required(goal, "goal")
        window = journal_query.recent(self.journal, WINDOW_SCAN, None, hours).events
        result = reflect(
            text,
            window,
            hours=hours,
            limit=limit,
            chat_url=self.settings.chat_url,
            chat_model=self.settings.chat_model,
        )
        recorded = self._record(reflection_event(result, actor=self.identity.actor()))
        return _result({**_reflection_payload(result), "recorded": recorded})

    @_reported
    def semantic_search(
        self,
        query: Annotated[
            str, Field(min_length=1, max_length=2000, description="What you are looking for.")
        ],
        hours: Hours = 168,
        limit: Annotated[
            int,
            Field(ge=1, le=50, description="Most events to return."),
            BeforeValidator(_json_integer),
        ] = 10,
    ) -> CallToolResult:
        """Events ranked by meaning rather than exact words: TF-IDF cosine similarity, or the
        configured embeddings endpoint. Best match first, each with its score."""
        from urchin import query as journal_query
        from urchin.recall.semantic import event_text, rank

        text = _required(query, "query")
        window = journal_query.recent(self.journal, WINDOW_SCAN, None, hours).events
        ranking = rank(
            text,
            [event_text(event) for event in window],
            limit,
            embedder_url=self.settings.embedder_url,
        )
        shown, omitted = _bounded(
            (window[hit.index], {"score": round(hit.score, 4)}) for hit in ranking.hits
        )
        payload: dict[str, Any] = {
            "query": text,
            "hours": hours,
            "method": ranking.method,
            "candidates": len(window),
            "count": len(shown),
            "events": shown,
        }
        if omitted:
            payload["omitted"] = omitted
        if ranking.note:
            payload["note"] = ranking.note
        return _result(payload)


def _reflection_payload(result: Reflection) -> dict[str, Any]:
    digest = result.digest
    threads, _ = _bounded(
        (thread.event, {"reason": thread.reason, "line": thread.line})
        for thread in digest.open_threads
    )
    decisions, _ = _bounded((event, {}) for event in digest.decisions)
    relevant, omitted = _bounded(
        (item.event, {"score": round(item.score, 4)}) for item in digest.relevant
    )
    payload: dict[str, Any] = {
        "goal": digest.goal,
        "hours": digest.hours,
        "events_considered": digest.considered,
        "by_source": dict(digest.by_source),
        "by_workspace": dict(digest.by_workspace),
        "workspaces": digest.workspaces,
        "decisions": decisions,
        "open_threads": threads,
        "matched_goal": digest.matched_goal,
        "relevant": relevant,
        "summary": result.summary,
        "summary_source": result.summary_source,
    }
    if omitted:
        payload["relevant_omitted"] = omitted
    if result.note:
        payload["note"] = result.note
    return payload
