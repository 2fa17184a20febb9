"""Reflection: a structured digest of recent events that bear on a goal.

The digest is computed without any model: counts by source and workspace, the
decisions taken, open threads (questions, TODO-like lines, failures), and the
events most relevant to the goal, ranked by IDF-weighted term overlap. When an
OpenAI-compatible chat endpoint is configured, a bounded rendering of the digest
is sent to it for a prose summary; if that fails, the digest's own summary is
used and the reflection says so.

Earlier reflections (source ``urchin-agent``) are left out of the input, so a
reflection never feeds on itself.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from urchin.event import Actor, Event, EventKind, format_timestamp
from urchin.recall.semantic import EndpointError, endpoint_url, event_text, post_json, tokenize

__all__ = [
    "AGENT_SOURCE",
    "Digest",
    "Reflection",
    "Relevant",
    "Thread",
    "ask_model",
    "build_digest",
    "deterministic_summary",
    "find_thread",
    "reflect",
    "reflection_event",
    "render",
]

AGENT_SOURCE = "urchin-agent"
#: Most characters of digest text ever sent to a chat endpoint.
MAX_PROMPT_CHARS = 12_000
#: Most characters kept from a model's answer.
MAX_SUMMARY_CHARS = 4_000
#: Most characters of the recorded reflection event.
MAX_EVENT_CHARS = 16_000
MAX_DECISIONS = 10
MAX_THREADS = 10
MAX_WORKSPACES = 10
_LINE_CHARS = 200
_SCAN_LINES = 60

ThreadReason = Literal["failure", "todo", "question"]

_FAILURE_RE = re.compile(
    r"\b(failed|failing|failure|traceback|panicked|fatal|segmentation fault"
    r"|exit (?:code|status) [1-9]\d*|command not found|errors? found)\b"
    r"|\berror:",
    re.IGNORECASE,
)
_TODO_RE = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b")
_TODO_PHRASE_RE = re.compile(
    r"\b(follow[- ]up|next step|still need|needs? to be|blocked on|not yet)\b", re.IGNORECASE
)
_EXIT_KEYS = ("exit_code", "exit_status")

_SYSTEM_PROMPT = (
    "You summarise a developer's recent activity journal for an AI coding agent that is "
    "about to work on a goal. Answer in at most 8 short bullet points: what bears on the "
    "goal, decisions already taken, and open threads to pick up. Use only the facts given; "
    "do not invent file names, commands or results."
)


@dataclass(frozen=True, slots=True)
class Thread:
    """An event that looks unfinished, the reason, and the line that shows it."""

    event: Event
    reason: ThreadReason
    line: str


@dataclass(frozen=True, slots=True)
class Relevant:
    """An event and how much of the goal's vocabulary it shares (0..1, IDF-weighted)."""

    event: Event
    score: float


@dataclass(frozen=True, slots=True)
class Digest:
    """What the window of events says about a goal; computed without any model."""

    goal: str
    hours: float
    considered: int
    by_source: list[tuple[str, int]]
    by_workspace: list[tuple[str, int]]
    workspaces: int
    decisions: list[Event]
    open_threads: list[Thread]
    relevant: list[Relevant]
    matched_goal: int


@dataclass(frozen=True, slots=True)
class Reflection:
    """A digest plus its summary; ``summary_source`` says whether a model wrote it."""

    digest: Digest
    summary: str
    summary_source: Literal["model", "digest"]
    note: str | None = None


# -- the digest --------------------------------------------------------------------------


def _clip(text: str, limit: int = _LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _head(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _clip(line)
    return ""


def _exit_failure(meta: Mapping[str, Any] | None) -> str | None:
    if not meta:
        return None
    for key in _EXIT_KEYS:
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value != 0:
            return f"exited with status {value}"
    return None


def find_thread(event: Event) -> Thread | None:
    """The first sign that an event left something open, or None.

    Failures win over TODO-like lines, which win over questions.
    """
    exit_failure = _exit_failure(event.meta)
    if exit_failure is not None:
        return Thread(event, "failure", _clip(f"{_head(event.content)} ({exit_failure})"))
    lines = [line.strip() for line in event.content.splitlines()[:_SCAN_LINES] if line.strip()]
    if event.title:
        lines.insert(0, event.title.strip())
    for line in lines:
        if _FAILURE_RE.search(line):
            return Thread(event, "failure", _clip(line))
    for line in lines:
        if _TODO_RE.search(line) or _TODO_PHRASE_RE.search(line):
            return Thread(event, "todo", _clip(line))
    for line in lines:
        if len(line) >= 8 and line.endswith(("?", "？")):
            return Thread(event, "question", _clip(line))
    return None


def _newest_first(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=lambda event: event.timestamp, reverse=True)


def _relevance(goal: str, events: Sequence[Event]) -> list[Relevant]:
    goal_terms = set(tokenize(goal))
    doc_terms = [set(tokenize(event_text(event))) for event in events]
    if not goal_terms:
        return [Relevant(event, 0.0) for event in events]
    df: Counter[str] = Counter()
    for found in doc_terms:
        df.update(found & goal_terms)
    total = len(events)
    idf = {term: math.log((1 + total) / (1 + df[term])) + 1.0 for term in goal_terms}
    whole = sum(idf.values())
    return [
        Relevant(event, sum(idf[term] for term in found & goal_terms) / whole)
        for event, found in zip(events, doc_terms, strict=True)
    ]


def build_digest(goal: str, events: Iterable[Event], *, hours: float, limit: int) -> Digest:
    """Digest the events of a window with respect to a goal.

    ``limit`` caps the relevant events listed; events are ranked by goal-term overlap,
    then recency. Events from :data:`AGENT_SOURCE` are ignored.
    """
    window = _newest_first(event for event in events if event.source != AGENT_SOURCE)
    by_source = Counter(event.source for event in window)
    by_workspace = Counter(event.workspace for event in window if event.workspace)
    decisions = [event for event in window if event.kind is EventKind.DECISION]
    threads: list[Thread] = []
    for event in window:
        if len(threads) >= MAX_THREADS:
            break
        thread = find_thread(event)
        if thread is not None:
            threads.append(thread)
    scored = _relevance(goal, window)
    order = sorted(
        range(len(scored)), key=lambda i: (-scored[i].score, -scored[i].event.timestamp.timestamp())
    )
    return Digest(
        goal=goal,
        hours=hours,
        considered=len(window),
        by_source=sorted(by_source.items(), key=lambda kv: (-kv[1], kv[0])),
        by_workspace=sorted(by_workspace.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_WORKSPACES],
        workspaces=len(by_workspace),
        decisions=decisions[:MAX_DECISIONS],
        open_threads=threads,
        relevant=[scored[i] for i in order[: max(limit, 0)]],
        matched_goal=sum(1 for item in scored if item.score > 0),
    )


def _counts(pairs: Sequence[tuple[str, int]], limit: int = 5) -> str:
    shown = ", ".join(f"{name} {count}" for name, count in pairs[:limit])
    return shown + (", …" if len(pairs) > limit else "")


def _hours_text(hours: float) -> str:
    return f"{hours:g}h"


def deterministic_summary(digest: Digest) -> str:
    """A few sentences that restate the digest; used when no model is configured or reachable."""
    if not digest.considered:
        return f"No events in the last {_hours_text(digest.hours)}."
    parts = [
        f"{digest.considered} events in the last {_hours_text(digest.hours)} from "
        f"{len(digest.by_source)} sources ({_counts(digest.by_source)})"
        + (
            f" across {digest.workspaces} workspaces ({_counts(digest.by_workspace, 3)})."
            if digest.workspaces
            else "."
        ),
        f"{digest.matched_goal} share terms with the goal.",
    ]
    if digest.decisions:
        parts.append(
            f"{len(digest.decisions)} decisions; latest: {_head(digest.decisions[0].content)}"
        )
    if digest.open_threads:
        reasons = Counter(thread.reason for thread in digest.open_threads)
        parts.append(
            f"{len(digest.open_threads)} open threads ("
            + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
            + f"); latest: {digest.open_threads[0].line}"
        )
    top = [item for item in digest.relevant[:3] if item.score > 0]
    if top:
        parts.append(
            "Most relevant: "
            + "; ".join(f"[{item.event.source}] {_head(item.event.content)}" for item in top)
        )
    return " ".join(parts)


def _stamp(event: Event) -> str:
    return format_timestamp(event.timestamp.replace(microsecond=0))


def render(reflection: Reflection, *, content_chars: int = _LINE_CHARS) -> str:
    """The reflection as plain text: what is recorded and what a chat model is shown."""
    digest = reflection.digest
    lines = [
        f"Reflection on: {_clip(digest.goal, 500)}",
        f"Window: last {_hours_text(digest.hours)}, {digest.considered} events",
        "",
        f"Summary ({reflection.summary_source}):",
        reflection.summary,
    ]
    if reflection.note:
        lines += ["", f"Note: {reflection.note}"]
    if digest.decisions:
        lines += ["", "Decisions:"]
        lines += [
            f"- {_stamp(e)} [{e.source}] {_clip(e.content, content_chars)}"
            for e in digest.decisions
        ]
    if digest.open_threads:
        lines += ["", "Open threads:"]
        lines += [
            f"- {_stamp(t.event)} [{t.event.source}] {t.reason}: {t.line}"
            for t in digest.open_threads
        ]
    if digest.relevant:
        lines += ["", "Most relevant:"]
        lines += [
            f"- ({item.score:.2f}) {_stamp(item.event)} [{item.event.source}]"
            + (f" {item.event.workspace}" if item.event.workspace else "")
            + f" {_clip(item.event.content, content_chars)}"
            for item in digest.relevant
        ]
    return "\n".join(lines)


# -- the optional model ------------------------------------------------------------------


def _prompt(digest: Digest) -> str:
    base = Reflection(digest, deterministic_summary(digest), "digest")
    text = f"Goal: {_clip(digest.goal, 1000)}\n\n" + render(base, content_chars=400)
    if len(text) > MAX_PROMPT_CHARS:
        text = text[: MAX_PROMPT_CHARS - 1] + "…"
    return text


def ask_model(
    digest: Digest, *, chat_url: str, chat_model: str | None = None, timeout: float = 45.0
) -> str:
    """Ask an OpenAI-compatible ``/chat/completions`` endpoint to summarise the digest.

    At most MAX_PROMPT_CHARS of digest text is sent; at most MAX_SUMMARY_CHARS is kept.

    Raises:
        EndpointError: the endpoint failed or answered without a message.
    """
    body: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": _SYSTEM_PROMPT},
            {"role": "user", "content": _prompt(digest)},
        ],
        "temperature": 0.2,
        "max_tokens": 600,
        "stream": False,
    }
    if chat_model:
        body["model"] = chat_model
    answer = post_json(
        endpoint_url(chat_url, "/chat/completions"), body, timeout=timeout, what="chat"
    )
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise EndpointError("the chat endpoint answered without a message") from None
    if not isinstance(content, str) or not content.strip():
        raise EndpointError("the chat endpoint answered with an empty message")
    content = content.strip()
    return content if len(content) <= MAX_SUMMARY_CHARS else content[: MAX_SUMMARY_CHARS - 1] + "…"


def reflect(
    goal: str,
    events: Iterable[Event],
    *,
    hours: float,
    limit: int,
    chat_url: str | None = None,
    chat_model: str | None = None,
    timeout: float = 45.0,
) -> Reflection:
    """Digest the events and summarise them, with the chat endpoint if one is set.

    Never raises for endpoint trouble: the digest's own summary is used and ``note`` says why.
    """
    digest = build_digest(goal, events, hours=hours, limit=limit)
    if chat_url:
        try:
            summary = ask_model(digest, chat_url=chat_url, chat_model=chat_model, timeout=timeout)
        except EndpointError as exc:
            note = f"{exc.message}; used the deterministic digest instead"
            return Reflection(digest, deterministic_summary(digest), "digest", note)
        return Reflection(digest, summary, "model")
    return Reflection(digest, deterministic_summary(digest), "digest")


def reflection_event(
    reflection: Reflection, *, actor: Actor | None = None, now: datetime | None = None
) -> Event:
    """The ``agent`` event, source ``urchin-agent``, that records a reflection."""
    text = render(reflection)
    if len(text) > MAX_EVENT_CHARS:
        text = text[: MAX_EVENT_CHARS - 1] + "…"
    return Event.create(
        text,
        AGENT_SOURCE,
        EventKind.AGENT,
        timestamp=now or datetime.now(UTC),
        title=_clip(f"Reflection: {reflection.digest.goal}", 120),
        tags=("reflection",),
        actor=actor,
    )
