"""The intake's wire models: what the OpenAPI document promises, and the size limits.

The models only describe; :meth:`urchin.event.Event.from_json` is the one judge of a
valid event, so a body the models would accept is still checked field by field.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_HOURS",
    "MAX_BATCH_BODY_BYTES",
    "MAX_BATCH_EVENTS",
    "MAX_BODY_BYTES",
    "MAX_RESULTS",
    "NOT_BLANK",
    "ActorIn",
    "BatchAnswer",
    "BatchError",
    "Dropped",
    "ErrorBody",
    "EventSummary",
    "Health",
    "IngestBatch",
    "IngestEvent",
    "OtherKindIn",
    "QueryAnswer",
    "RecentAnswer",
    "Recorded",
]

#: Largest ``POST /ingest`` body; larger ones get 413 before they are buffered.
MAX_BODY_BYTES = 1024 * 1024
#: Largest ``POST /ingest/batch`` body (a batch holds up to 1,000 events).
MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024
MAX_BATCH_EVENTS = 1000
MAX_RESULTS = 200
DEFAULT_HOURS = 168.0


# What the document promises (the models only describe; Event.from_json validates).
# "Not blank" is the pattern \S: at least one character that is not whitespace.
NOT_BLANK = r"\S"


class ActorIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    account: str
    device: str
    workspace: str | None = None
    node_id: str | None = None


class OtherKindIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    other: str = Field(pattern=NOT_BLANK, description="A kind outside the known words.")


class IngestEvent(BaseModel):
    """A full journal Event, or just ``content`` and ``source``.

    A missing ``id`` becomes a fresh UUID v4, a missing ``timestamp`` the current
    UTC time and a missing ``kind`` ``"conversation"``. Unknown fields are ignored.
    """

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"examples": [{"content": "Hardened intake auth.", "source": "copilot"}]},
    )
    content: str = Field(pattern=NOT_BLANK, description="What happened; must not be blank.")
    source: str = Field(
        pattern=NOT_BLANK, description="Who reports it (copilot, claude, a script…); not blank."
    )
    id: uuid.UUID | None = None
    timestamp: datetime | None = Field(None, description="RFC 3339 with an offset; default now.")
    kind: Annotated[str, Field(pattern=NOT_BLANK)] | OtherKindIn | None = Field(
        None, description='conversation, agent, command, commit, file, … or {"other": name}.'
    )
    brain: str | None = None
    workspace: str | None = None
    session: str | None = None
    title: str | None = None
    tags: list[str] | None = None
    actor: ActorIn | None = None
    meta: dict[str, Any] | None = None


class IngestBatch(BaseModel):
    model_config = ConfigDict(extra="allow")
    events: list[IngestEvent] = Field(max_length=MAX_BATCH_EVENTS)


class Recorded(BaseModel):
    id: str
    status: Literal["ok"]


class Dropped(BaseModel):
    id: str
    status: Literal["dropped"]
    reason: Literal["ephemeral", "ignored"]


class ErrorBody(BaseModel):
    error: str


class BatchError(BaseModel):
    index: int
    id: str | None = Field(description="The event's own id, when it had a valid one.")
    error: str


class BatchAnswer(BaseModel):
    accepted: int = Field(description="Events written.")
    dropped: int = Field(description="Events not written: ephemeral mode or ignored workspace.")
    errors: list[BatchError]


class Health(BaseModel):
    status: Literal["ok"]
    events: int | None = Field(None, description="Left out when a token is set but not sent.")
    ephemeral: bool | None = Field(None, description="Left out when a token is set but not sent.")


class EventSummary(BaseModel):
    id: str
    timestamp: str
    source: str
    kind: str | dict[str, str]
    content: str


class RecentAnswer(BaseModel):
    events: list[EventSummary]
    count: int


class QueryAnswer(RecentAnswer):
    query: str
