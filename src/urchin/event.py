"""The Event model and the one place that knows the journal line format.

A journal line is the compact JSON of an Event (see docs/FORMATS.md): keys in a
fixed order, no ``null`` values, no empty ``tags``, non-ASCII kept as UTF-8.
Readers ignore fields they do not know, so newer writers stay readable.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from json.encoder import encode_basestring
from typing import Any, TypeAlias

from urchin.errors import MalformedEventError, UsageError

__all__ = [
    "Actor",
    "Event",
    "EventKind",
    "JsonValue",
    "Kind",
    "OtherKind",
    "format_timestamp",
    "parse_kind",
    "parse_timestamp",
]

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None


# Built once: json.dumps with non-default options constructs a new encoder per call.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)


class EventKind(StrEnum):
    """The kinds every urchin writer knows; anything else is an :class:`OtherKind`."""

    CONVERSATION = "conversation"
    AGENT = "agent"
    COMMAND = "command"
    COMMIT = "commit"
    FILE = "file"
    DECISION = "decision"
    PURCHASE = "purchase"
    LOCATION = "location"
    HEALTH_METRIC = "health_metric"
    CALENDAR_EVENT = "calendar_event"
    SEARCH_QUERY = "search_query"
    WATCH_HISTORY = "watch_history"


@dataclass(frozen=True, slots=True)
class OtherKind:
    """A kind outside :class:`EventKind`; written as ``{"other":"<name>"}``."""

    name: str

    def __str__(self) -> str:
        return self.name


Kind: TypeAlias = EventKind | OtherKind
_KINDS = (EventKind, OtherKind)
# How the encoder writes a string with ensure_ascii off (the journal's form).
_STR = encode_basestring
_KIND_JSON = {kind: _STR(kind.value) for kind in EventKind}


def parse_kind(value: object) -> Kind:
    """Read a kind from a bare string or the ``{"other": name}`` form.

    Raises:
        MalformedEventError: the value is neither form, or the name is blank.
    """
    if isinstance(value, str):
        name = value.strip()
        if not name:
            raise MalformedEventError("kind must not be blank")
        try:
            return EventKind(name.lower())
        except ValueError:
            return OtherKind(name)
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("other"), str):
        name = value["other"].strip()
        if not name:
            raise MalformedEventError("kind must not be blank")
        return OtherKind(name)
    raise MalformedEventError('kind must be a string or {"other": "<name>"}')


def parse_timestamp(value: object) -> datetime:
    """Parse an RFC 3339 timestamp with an offset and convert it to UTC.

    Raises:
        MalformedEventError: not a string, not RFC 3339, or no UTC offset.
    """
    if not isinstance(value, str):
        raise MalformedEventError("timestamp must be an RFC 3339 string")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise MalformedEventError("timestamp is not RFC 3339") from None
    if parsed.tzinfo is None:
        raise MalformedEventError("timestamp needs a UTC offset such as Z")
    if parsed.tzinfo is UTC:
        return parsed  # "Z" or "+00:00": already UTC, and most timestamps are
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # e.g. 0001-01-01T00:00:00+01:00: before year 1 once moved to UTC.
        raise MalformedEventError("timestamp is out of range") from None


def format_timestamp(moment: datetime) -> str:
    """Format as UTC with ``Z``: whole seconds, milliseconds or microseconds, as needed."""
    global _last_formatted
    last = _last_formatted
    if last[0] is moment:
        # Events read from one record (the lines of one Codex turn, the blocks of one
        # message) share their time object: it is formatted once for all of them.
        return last[1]
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    # Spelled out rather than isoformat(): that formats the "+00:00" offset through the
    # tzinfo, then it is cut off again, and this runs once per written line.
    base = _SECONDS % (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)
    micros = utc.microsecond
    if micros == 0:
        text = base + "Z"
    elif micros % 1000 == 0:
        text = f"{base}.{micros // 1000:03d}Z"
    else:
        text = f"{base}.{micros:06d}Z"
    # One tuple, replaced whole: a thread reading it sees an old pair or a new one.
    _last_formatted = (moment, text)
    return text


_SECONDS = "%04d-%02d-%02dT%02d:%02d:%02d"
# The last time formatted and its text (datetimes are immutable, so identity is enough).
_last_formatted: tuple[datetime | None, str] = (None, "")


@dataclass(frozen=True, slots=True)
class Actor:
    """Who produced an event. Informational only; never used for auth."""

    account: str
    device: str
    workspace: str | None = None
    node_id: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"account": self.account, "device": self.device}
        if self.workspace is not None:
            out["workspace"] = self.workspace
        if self.node_id is not None:
            out["node_id"] = self.node_id
        return out

    @classmethod
    def from_json(cls, value: object) -> Actor:
        if not isinstance(value, dict):
            raise MalformedEventError("actor must be an object")
        return cls(
            account=_required_str(value, "actor.account", "account"),
            device=_required_str(value, "actor.device", "device"),
            workspace=_optional_str(value, "actor.workspace", "workspace"),
            node_id=_optional_str(value, "actor.node_id", "node_id"),
        )


@dataclass(frozen=True, slots=True, init=False)
class Event:
    """One thing that happened. Immutable; build new ones with :meth:`create`."""

    id: uuid.UUID
    timestamp: datetime
    source: str
    kind: Kind
    content: str
    brain: str | None = None
    workspace: str | None = None
    session: str | None = None
    title: str | None = None
    tags: tuple[str, ...] = ()
    actor: Actor | None = None
    meta: Mapping[str, JsonValue] | None = field(default=None, compare=True)

    def __init__(
        self,
        id: uuid.UUID,
        timestamp: datetime,
        source: str,
        kind: Kind,
        content: str,
        brain: str | None = None,
        workspace: str | None = None,
        session: str | None = None,
        title: str | None = None,
        tags: tuple[str, ...] = (),
        actor: Actor | None = None,
        meta: Mapping[str, JsonValue] | None = None,
    ) -> None:
        # What the generated __init__ of a frozen dataclass does, storing each field
        # through its slot's descriptor instead of looking up object.__setattr__ for
        # every field: an event is built for every line written, often twice.
        _SET_ID(self, id)
        _SET_TIMESTAMP(self, timestamp)
        _SET_SOURCE(self, source)
        _SET_KIND(self, kind)
        _SET_CONTENT(self, content)
        _SET_BRAIN(self, brain)
        _SET_WORKSPACE(self, workspace)
        _SET_SESSION(self, session)
        _SET_TITLE(self, title)
        _SET_TAGS(self, tags)
        _SET_ACTOR(self, actor)
        _SET_META(self, meta)

    @classmethod
    def create(
        cls,
        content: str,
        source: str,
        kind: Kind | str = EventKind.CONVERSATION,
        *,
        timestamp: datetime | None = None,
        event_id: uuid.UUID | None = None,
        workspace: str | None = None,
        session: str | None = None,
        title: str | None = None,
        tags: Iterable[str] = (),
        actor: Actor | None = None,
        meta: Mapping[str, JsonValue] | None = None,
    ) -> Event:
        """Build a new event with a fresh UUID v4 and the current time.

        Raises:
            UsageError: content or source is blank after trimming, or the kind is blank.
        """
        if not content.strip():
            raise UsageError("content must not be blank")
        source = source.strip()
        if not source:
            raise UsageError("source must not be blank")
        if timestamp is None:
            timestamp = datetime.now(UTC)
        elif timestamp.tzinfo is not UTC:
            timestamp = timestamp.astimezone(UTC)
        return cls(
            id=event_id or uuid.uuid4(),
            timestamp=timestamp,
            source=source,
            kind=kind if isinstance(kind, _KINDS) else parse_kind(kind),
            content=content,
            workspace=workspace or None,
            session=session or None,
            title=title or None,
            tags=tuple(t for t in (tag.strip() for tag in tags) if t) if tags else (),
            actor=actor,
            meta=dict(meta) if meta else None,
        )

    def with_actor(self, actor: Actor) -> Event:
        return replace(self, actor=actor)

    # -- serialization -------------------------------------------------------------

    def to_json(self) -> dict[str, JsonValue]:
        """The event as a JSON object in journal key order, nulls and empty tags left out."""
        kind = self.kind
        out: dict[str, JsonValue] = {
            "id": str(self.id),
            "timestamp": format_timestamp(self.timestamp),
            "source": self.source,
            "kind": kind.value if isinstance(kind, EventKind) else {"other": kind.name},
            "content": self.content,
        }
        # Spelled out rather than looped: this runs once per appended line.
        if self.brain is not None:
            out["brain"] = self.brain
        if self.workspace is not None:
            out["workspace"] = self.workspace
        if self.session is not None:
            out["session"] = self.session
        if self.title is not None:
            out["title"] = self.title
        if self.tags:
            out["tags"] = list(self.tags)
        if self.actor is not None:
            out["actor"] = self.actor.to_json()
        if self.meta:
            meta: dict[str, JsonValue] = {k: v for k, v in self.meta.items() if v is not None}
            if meta:
                out["meta"] = meta
        return out

    def to_line(self) -> bytes:
        """The journal line for this event, UTF-8, ending in a newline.

        The same bytes as the compact JSON of :meth:`to_json`, written out piece by
        piece: the keys are fixed, so only the values need encoding, and building the
        dict for the encoder cost more than encoding it. ``meta``, the one free-form
        field, goes through the encoder.
        """
        text = _STR
        kind = self.kind
        # str(self.id), without the call: the lower-case hyphenated form.
        hexed = "%032x" % self.id.int  # noqa: UP031 - the quickest of the spellings
        parts = [
            '{"id":"',
            f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}",
            '","timestamp":"',
            format_timestamp(self.timestamp),
            '","source":',
            text(self.source),
            ',"kind":',
            _KIND_JSON[kind] if isinstance(kind, EventKind) else f'{{"other":{text(kind.name)}}}',
            ',"content":',
            text(self.content),
        ]
        if self.brain is not None:
            parts += (',"brain":', text(self.brain))
        if self.workspace is not None:
            parts += (',"workspace":', text(self.workspace))
        if self.session is not None:
            parts += (',"session":', text(self.session))
        if self.title is not None:
            parts += (',"title":', text(self.title))
        if self.tags:
            parts += (',"tags":[', ",".join(map(text, self.tags)), "]")
        actor = self.actor
        if actor is not None:
            parts += (',"actor":{"account":', text(actor.account), ',"device":', text(actor.device))
            if actor.workspace is not None:
                parts += (',"workspace":', text(actor.workspace))
            if actor.node_id is not None:
                parts += (',"node_id":', text(actor.node_id))
            parts.append("}")
        if self.meta:
            meta = {k: v for k, v in self.meta.items() if v is not None}
            if meta:
                parts += (',"meta":', _COMPACT.encode(meta))
        parts.append("}\n")
        try:
            return "".join(parts).encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (from a \ud800 escape on input) cannot be UTF-8;
            # ASCII escapes keep the line valid JSON that reads back the same.
            return (_COMPACT_ASCII.encode(self.to_json()) + "\n").encode("ascii")

    @classmethod
    def from_json(cls, obj: object) -> Event:
        """Build an Event from a decoded JSON object; unknown fields are ignored.

        Raises:
            MalformedEventError: a required field is missing or a field has the wrong type.
        """
        if not isinstance(obj, dict):
            raise MalformedEventError("an event must be a JSON object")
        raw_id = _required_str(obj, "id")
        try:
            event_id = uuid.UUID(raw_id)
        except ValueError:
            raise MalformedEventError("id must be a UUID") from None
        if "timestamp" not in obj:
            raise MalformedEventError("missing required field: timestamp")
        if "kind" not in obj or obj["kind"] is None:
            raise MalformedEventError("missing required field: kind")
        tags = obj.get("tags")
        if tags is None:
            tags = []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise MalformedEventError("tags must be a list of strings")
        actor = obj.get("actor")
        meta = obj.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise MalformedEventError("meta must be an object")
        return cls(
            id=event_id,
            timestamp=parse_timestamp(obj["timestamp"]),
            source=_required_str(obj, "source"),
            kind=parse_kind(obj["kind"]),
            content=_required_str(obj, "content"),
            brain=_optional_str(obj, "brain"),
            workspace=_optional_str(obj, "workspace"),
            session=_optional_str(obj, "session"),
            title=_optional_str(obj, "title"),
            tags=tuple(tags),
            actor=None if actor is None else Actor.from_json(actor),
            meta=meta or None,
        )

    @classmethod
    def from_line(cls, line: bytes | str) -> Event:
        """Parse one journal line (with or without its newline).

        Raises:
            MalformedEventError: not UTF-8, not JSON, or not a valid Event.
        """
        try:
            obj: Any = json.loads(line)
        except UnicodeDecodeError:
            raise MalformedEventError("line is not valid UTF-8") from None
        except ValueError:
            raise MalformedEventError("line is not valid JSON") from None
        return cls.from_json(obj)


def _slot_setter(name: str) -> Callable[[Event, Any], None]:
    setter: Callable[[Event, Any], None] = Event.__dict__[name].__set__
    return setter


_SET_ID = _slot_setter("id")
_SET_TIMESTAMP = _slot_setter("timestamp")
_SET_SOURCE = _slot_setter("source")
_SET_KIND = _slot_setter("kind")
_SET_CONTENT = _slot_setter("content")
_SET_BRAIN = _slot_setter("brain")
_SET_WORKSPACE = _slot_setter("workspace")
_SET_SESSION = _slot_setter("session")
_SET_TITLE = _slot_setter("title")
_SET_TAGS = _slot_setter("tags")
_SET_ACTOR = _slot_setter("actor")
_SET_META = _slot_setter("meta")


def _required_str(obj: Mapping[str, Any], label: str, key: str | None = None) -> str:
    value = obj.get(key or label)
    if value is None:
        raise MalformedEventError(f"missing required field: {label}")
    if not isinstance(value, str):
        raise MalformedEventError(f"{label} must be a string")
    return value


def _optional_str(obj: Mapping[str, Any], label: str, key: str | None = None) -> str | None:
    value = obj.get(key or label)
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedEventError(f"{label} must be a string")
    return value
