"""The HTTP intake: anything on this machine can push events into the journal.

``POST /ingest`` runs the spec's four gates in order: auth (a Bearer token, when
one is configured), ephemeral mode (202, nothing written), validation (content
and source non-blank) and the durable write (200 only once the line is fsynced).
Reading the body (content type, size, JSON syntax) belongs to the first step
after auth, like a framework's extractor, so a malformed body is a 4xx even in
ephemeral mode. Writes go through the Recorder, so an event from an ignored
workspace is answered 202 with reason ``ignored``, and secrets are redacted.

Durability with throughput comes from group commit (:mod:`urchin.intake.commit`):
handlers queue their events for one committer thread, which appends a whole
group of requests with one write and fsyncs once before waking the handlers.
Every fsync therefore starts after the append of each request it acknowledges.
``POST /ingest`` and ``/ingest/batch`` bypass FastAPI (see :class:`_IntakeApp`):
they run once per event, so their per-request cost is kept to the minimum.

Auth covers every endpoint but ``/health`` and the documentation
(``/openapi.json``, ``/docs``), which hold no journal data. Without the token,
``/health`` answers only ``{"status": "ok"}`` so it leaks no counts. Errors never
echo the body, a field value or a header.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import math
import os
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from fastapi.security import HTTPBearer
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from urchin import __version__, query
from urchin.config import Settings
from urchin.errors import JournalWriteError, RedactionError, UrchinError, UsageError
from urchin.event import Event, format_timestamp
from urchin.intake.commit import GroupCommitter
from urchin.intake.models import (
    DEFAULT_HOURS,
    MAX_BATCH_BODY_BYTES,
    MAX_BATCH_EVENTS,
    MAX_BODY_BYTES,
    MAX_RESULTS,
    NOT_BLANK,
    BatchAnswer,
    Dropped,
    ErrorBody,
    Health,
    IngestBatch,
    IngestEvent,
    QueryAnswer,
    RecentAnswer,
    Recorded,
)
from urchin.recorder import BatchResult, Outcome, Recorder

__all__ = ["Intake", "create_app", "event_from_body"]

log = logging.getLogger("urchin.intake")

_UNAUTHORIZED = "Missing or wrong Bearer token"
_WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in [
        (400, "Malformed JSON or an invalid field"),
        (401, _UNAUTHORIZED),
        (413, "Body too large, or more than 1,000 events"),
        (415, "Content type is not application/json"),
        (500, "The journal could not be written"),
        (503, "The intake is shutting down; retry later"),
    ]
}
_READ_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in [(400, "Invalid query parameter"), (401, _UNAUTHORIZED), (500, "Read failed")]
}


# -- request handling ------------------------------------------------------------------


class _Reject(Exception):
    """An error answer; ``message`` is ours and never contains request data."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# Built once: json.dumps and json.loads with options construct a new coder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_CONTENT_TYPE = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class _Answer:
    """A whole JSON answer: status, body and any headers besides length and type."""

    status: int
    body: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()

    async def send(self, send: Send) -> None:
        # The same two messages, in the same header order, as a Starlette Response.
        headers = [*self.headers, (b"content-length", b"%d" % len(self.body)), _CONTENT_TYPE]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})

    def response(self) -> Response:
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in self.headers}
        return Response(self.body, self.status, headers, media_type="application/json")


def _json_answer(
    status: int, body: object, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> _Answer:
    return _Answer(status, _ENCODER.encode(body).encode("utf-8"), headers)


def _error(status: int, message: str) -> _Answer:
    headers: tuple[tuple[bytes, bytes], ...] = ()
    if status == 413:
        # The rest of the body may still be on the wire; closing beats draining it.
        headers = ((b"connection", b"close"),)
    elif status == 401:
        headers = ((b"www-authenticate", b"Bearer"),)
    return _json_answer(status, {"error": message}, headers)


def _reject_constant(name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _write_headers(scope: Scope) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The first content-type, content-length and authorization header values, if any."""
    content_type = length = authorization = None
    # One pass over the raw list: cheaper than building a header mapping per request.
    for name, value in scope["headers"]:
        if name == b"content-type":
            if content_type is None:
                content_type = value
        elif name == b"content-length":
            if length is None:
                length = value
        elif name == b"authorization" and authorization is None:
            authorization = value
    return content_type, length, authorization


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The request body, refused as soon as it grows past ``limit``.

    Raises:
        _Reject: 413 too large, 400 the client went away mid-body.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk: bytes = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise _Reject(413, f"body is larger than {limit} bytes")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif kind == "http.disconnect":
            raise _Reject(400, "the client went away before the body was complete")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _decode_json(body: bytes) -> Any:
    """Raises: _Reject: 400 the body is not UTF-8 JSON (NaN and Infinity included)."""
    try:
        return _DECODER.decode(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Reject(400, "body is not UTF-8") from None
    except (ValueError, RecursionError):
        raise _Reject(400, "body is not valid JSON") from None


def _require_text(obj: dict[str, Any], name: str) -> None:
    value = obj.get(name)
    if value is None:
        raise UsageError(f"{name} is required")
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string")
    if not value.strip():
        raise UsageError(f"{name} must not be blank")


class _Ids:
    """UUID v4 strings, as :func:`uuid.uuid4` makes them, from one ``os.urandom`` per 256.

    ``os.urandom`` is a system call that releases the GIL; on the event loop each
    release lets the commit thread in, and getting the GIL back costs far more than
    the call itself. Thread-safe; a forked child starts a fresh pool.
    """

    _BATCH = 256
    _lock: threading.Lock
    _pool: bytes
    _at: int

    def __init__(self) -> None:
        self.reset()

    def next(self) -> str:
        with self._lock:
            if self._at == len(self._pool):
                self._pool = os.urandom(16 * self._BATCH)
                self._at = 0
            raw = self._pool[self._at : self._at + 16]
            self._at += 16
        return str(uuid.UUID(bytes=raw, version=4))

    def reset(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0


_IDS = _Ids()
os.register_at_fork(after_in_child=_IDS.reset)


def event_from_body(obj: object, now: datetime | None = None) -> Event:
    """Turn one decoded request object into an Event, filling in id, timestamp and kind.

    Raises:
        UsageError: not an object, content or source missing or blank, or another field
            invalid (a MalformedEventError). Messages name fields, never values.
    """
    if not isinstance(obj, dict):
        raise UsageError("an event must be a JSON object")
    _require_text(obj, "content")
    _require_text(obj, "source")
    fields = dict(obj)
    if fields.get("id") is None:
        fields["id"] = _IDS.next()
    if fields.get("timestamp") is None:
        fields["timestamp"] = format_timestamp(now or datetime.now(UTC))
    if fields.get("kind") is None:
        fields["kind"] = "conversation"
    return Event.from_json(fields)


def _given_id(obj: object) -> str | None:
    """The event's own id, normalised, when it has a valid one."""
    if isinstance(obj, dict) and isinstance(obj.get("id"), str):
        with contextlib.suppress(ValueError):
            return str(uuid.UUID(obj["id"]))
    return None


def _dropped(event_id: str, reason: str) -> _Answer:
    return _json_answer(202, {"id": event_id, "status": "dropped", "reason": reason})


def _summary(event: Event) -> dict[str, Any]:
    data = event.to_json()
    return {key: data[key] for key in ("id", "timestamp", "source", "kind", "content")}


_READ_FAILED = "the journal could not be read; see the intake log"


class Intake:
    """What one intake app shares between requests: recorder, committer, token.

    The write handlers speak raw ASGI (``scope`` and ``receive`` in, an answer out):
    they run once per event, and framework request and response objects cost more
    than the handler's own work.
    """

    def __init__(self, settings: Settings) -> None:
        """Raises: ConfigError: a configured redaction pattern is invalid."""
        self.recorder = Recorder.from_settings(settings, durable=False)
        self.journal = self.recorder.journal
        self.ephemeral = self.recorder.ephemeral
        self.committer = GroupCommitter(self.recorder)
        token = settings.intake_token
        self._token = token.encode("utf-8") if token else None

    def authorized(self, header: str | None) -> bool:
        """Whether a request with this Authorization header may proceed."""
        if self._token is None:
            return True
        scheme, _, credentials = (header or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            # Header values arrive latin-1 decoded; encoding back gives the bytes sent.
            sent = credentials.strip().encode("latin-1")
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(sent, self._token)

    def close(self) -> None:
        """Finish queued writes and release the journal. Call when the server stops."""
        self.committer.close()
        self.journal.close()

    def ephemeral_active(self) -> bool:
        # A stat() on the event loop: a thread hop would cost more than the call itself.
        return self.ephemeral.is_active()

    async def ingest(self, scope: Scope, receive: Receive) -> _Answer:
        """``POST /ingest``: the four gates, then 200 once the line is fsynced."""
        try:
            body = await self._read_json(scope, receive, MAX_BODY_BYTES)
            try:
                event = event_from_body(body)
            except UsageError as exc:
                # Ephemeral mode comes before validation: a bad event is dropped, not refused.
                if self.ephemeral_active():
                    return _dropped(_given_id(body) or str(uuid.uuid4()), "ephemeral")
                raise _Reject(400, exc.message) from None
            # A valid event goes to the committer without a stat of the ephemeral flag here:
            # the committer checks it once per group, just before writing, and answers
            # DROPPED, which becomes the same 202 as above.
            result = await self._commit([event])
            event_id = str(event.id)
            if result.outcome is Outcome.OK:
                # A UUID needs no escaping: format the answer instead of encoding a dict.
                return _Answer(200, b'{"id":"%s","status":"ok"}' % event_id.encode("ascii"))
            reason = "ephemeral" if result.outcome is Outcome.DROPPED else "ignored"
            return _dropped(event_id, reason)
        except _Reject as exc:
            return _error(exc.status, exc.message)

    async def ingest_batch(self, scope: Scope, receive: Receive) -> _Answer:
        """``POST /ingest/batch``: each event validated alone, the valid ones written together."""
        try:
            body = await self._read_json(scope, receive, MAX_BATCH_BODY_BYTES)
            items = body.get("events") if isinstance(body, dict) else None
            if not isinstance(items, list):
                raise _Reject(400, 'body must be an object {"events": [...]}')
            if len(items) > MAX_BATCH_EVENTS:
                raise _Reject(413, f"a batch holds at most {MAX_BATCH_EVENTS} events")
            if self.ephemeral_active():
                return _json_answer(202, {"accepted": 0, "dropped": len(items), "errors": []})
            now = datetime.now(UTC)
            valid: list[Event] = []
            errors: list[dict[str, Any]] = []
            for index, item in enumerate(items):
                try:
                    valid.append(event_from_body(item, now))
                except UsageError as exc:
                    errors.append({"index": index, "id": _given_id(item), "error": exc.message})
            accepted = dropped = 0
            status = 200
            if valid:
                result = await self._commit(valid)
                accepted, dropped = result.written, len(valid) - result.written
                status = 202 if result.outcome is Outcome.DROPPED else 200
            answer = {"accepted": accepted, "dropped": dropped, "errors": errors}
            return _json_answer(status, answer)
        except _Reject as exc:
            return _error(exc.status, exc.message)

    async def _read_json(self, scope: Scope, receive: Receive, limit: int) -> Any:
        """Check auth, then read and decode a JSON body of at most ``limit`` bytes.

        Raises:
            _Reject: 401 unauthorized, 415 wrong content type, 413 too large, 400 not
                UTF-8 JSON or the client went away.
        """
        content_type, length, authorization = _write_headers(scope)
        if self._token is not None and not self.authorized(
            None if authorization is None else authorization.decode("latin-1")
        ):
            raise _Reject(401, "unauthorized")
        media_type = (content_type or b"").decode("latin-1").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            raise _Reject(415, "content type must be application/json")
        if length is not None and length.isdigit() and int(length) > limit:
            raise _Reject(413, f"body is larger than {limit} bytes")
        return _decode_json(await _read_body(receive, limit))

    async def _commit(self, events: Sequence[Event]) -> BatchResult:
        try:
            return await self.committer.commit(events)
        except JournalWriteError:
            raise _Reject(500, "the journal could not be written; see the intake log") from None
        except RedactionError as exc:
            raise _Reject(400, exc.message) from None
        except RuntimeError:
            if self.ephemeral_active():
                # Dropped, as it would have been: a 503 would invite a retry after the mode ends.
                return BatchResult(Outcome.DROPPED, 0, 0)
            raise _Reject(503, "the intake is shutting down") from None

    async def health(self, authorized: bool) -> dict[str, Any]:
        """``{"status": "ok"}``, plus the event count and ephemeral flag when authorized."""
        if not authorized:
            return {"status": "ok"}
        try:
            events = await run_in_threadpool(query.count, self.journal)
        except UrchinError as exc:
            log.error("%s", exc.message)
            raise _Reject(500, _READ_FAILED) from None
        return {"status": "ok", "events": events, "ephemeral": self.ephemeral_active()}

    async def read(
        self, text: str | None, limit: int, source: str | None, hours: float
    ) -> list[dict[str, Any]]:
        """Newest events (``text`` None) or search hits, as summaries, newest first."""
        if not math.isfinite(hours) or hours <= 0:
            raise _Reject(400, "hours must be a number above 0")
        limit = min(limit, MAX_RESULTS)
        source = source.strip() if source and source.strip() else None
        try:
            if text is None:
                result = await run_in_threadpool(query.recent, self.journal, limit, source, hours)
            else:
                result = await run_in_threadpool(
                    query.search, self.journal, text, limit, source, hours
                )
        except UrchinError as exc:
            log.error("%s", exc.message)
            raise _Reject(500, _READ_FAILED) from None
        return [_summary(event) for event in result.events]


# -- the application -------------------------------------------------------------------

_DESCRIPTION = (
    "Push events into the urchin journal. Every write is on stable storage before "
    "it is acknowledged. When an intake token is configured, every endpoint except "
    "/health and this document needs `Authorization: Bearer <token>`."
)
_BEARER = "HTTPBearer"
# Module level: FastAPI resolves annotations in the module's namespace. The
# dependency only documents the scheme; Intake.authorized does the checking.
_bearer = HTTPBearer(auto_error=False, scheme_name=_BEARER, description="The intake_token.")
_BearerHeader = Annotated[Any, Depends(_bearer)]


_WriteHandler = Callable[[Scope, Receive], Awaitable[_Answer]]


class _IntakeApp(FastAPI):
    """FastAPI, except that ``POST /ingest`` and ``/ingest/batch`` go straight to their handlers.

    The same handlers are registered as routes too (for the OpenAPI document), but
    taking them before FastAPI skips its telemetry check, middleware, routing and
    dependency solving, which cost more than the handler itself. The handlers do
    their own auth and error answers either way.
    """

    def __init__(self, intake: Intake, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state.intake = intake
        self._writes: dict[str, _WriteHandler] = {
            "/ingest": intake.ingest,
            "/ingest/batch": intake.ingest_batch,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path: str = scope["path"]
            root: str = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            handler = self._writes.get(path)
            if handler is not None:
                try:
                    answer = await handler(scope, receive)
                except Exception as exc:  # the ASGI boundary: a bug fails this request only
                    # Outside FastAPI's error middleware: answer 500 ourselves. The error's
                    # text may quote the body, so only its type is logged.
                    log.error("POST %s failed with %s", path, type(exc).__name__)
                    answer = _error(500, "internal error; see the intake log")
                await answer.send(send)
                return
        await super().__call__(scope, receive, send)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema:
            return self.openapi_schema
        schema = get_openapi(
            title=self.title, version=self.version, description=self.description, routes=self.routes
        )
        _, defs = models_json_schema(
            [(IngestEvent, "validation"), (IngestBatch, "validation")],
            ref_template="#/components/schemas/{model}",
        )
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(defs.get("$defs", {}))
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                # Query errors are answered with 400, never FastAPI's 422.
                operation.get("responses", {}).pop("422", None)
        self.openapi_schema = schema
        return schema


def _write_doc(model: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model}"}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": ref}}},
        "security": [{_BEARER: []}],
    }


def create_app(settings: Settings) -> FastAPI:
    """Build the intake ASGI app for ``settings``.

    Its lifespan finishes queued writes on shutdown. Mounted inside another app
    (whose lifespan runs instead), call ``app.state.intake.close()`` from the
    parent's shutdown.

    Raises:
        ConfigError: a configured redaction pattern is invalid.
    """
    intake = Intake(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(intake.close)

    app = _IntakeApp(
        intake,
        title="urchin intake",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        redoc_url=None,
    )

    async def require_token(request: Request, _: _BearerHeader) -> None:
        if not intake.authorized(request.headers.get("authorization")):
            raise _Reject(401, "unauthorized")

    async def on_reject(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _Reject)
        return _error(exc.status, exc.message).response()

    async def on_invalid_query(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        names = sorted({str(err["loc"][-1]) for err in exc.errors() if err.get("loc")})
        return _error(400, f"invalid query parameter: {', '.join(names) or 'unknown'}").response()

    app.add_exception_handler(_Reject, on_reject)
    app.add_exception_handler(RequestValidationError, on_invalid_query)
    # A dependency runs before query parameters are validated, so auth is checked first.
    guard = [Depends(require_token)]
    dropped = "Ephemeral mode or ignored workspace: not written"
    all_dropped = "Ephemeral mode: nothing written"
    partial = (
        "The valid events are written; each invalid one is listed in errors with its index"
        " (a partial batch is still 200)"
    )

    @app.post(
        "/ingest",
        response_model=Recorded,
        responses={**_WRITE_ERRORS, 202: {"model": Dropped, "description": dropped}},
        openapi_extra=_write_doc("IngestEvent"),
        summary="Record one event",
    )
    async def ingest(request: Request) -> Response:
        """Write one event; 200 once it is fsynced, 202 if it is dropped."""
        return (await intake.ingest(request.scope, request.receive)).response()

    @app.post(
        "/ingest/batch",
        response_model=BatchAnswer,
        responses={
            **_WRITE_ERRORS,
            200: {"model": BatchAnswer, "description": partial},
            202: {"model": BatchAnswer, "description": all_dropped},
            413: {"model": ErrorBody, "description": "Body too large, or more than 1,000 events"},
        },
        openapi_extra=_write_doc("IngestBatch"),
        summary="Record up to 1,000 events",
    )
    async def ingest_batch(request: Request) -> Response:
        """Validate each event alone; write the valid ones together, durably."""
        return (await intake.ingest_batch(request.scope, request.receive)).response()

    @app.get(
        "/health",
        response_model=Health,
        response_model_exclude_none=True,
        responses={500: {"model": ErrorBody, "description": "The journal could not be read"}},
        # Open to anyone ({}); the token, when sent, only adds the count and the mode.
        openapi_extra={"security": [{}, {_BEARER: []}]},
        summary="Liveness, event count and ephemeral mode",
    )
    async def health(request: Request, _: _BearerHeader) -> dict[str, Any]:
        """Always 200. Counts and mode only when no token is needed or the right one is sent."""
        return await intake.health(intake.authorized(request.headers.get("authorization")))

    @app.get(
        "/recent",
        response_model=RecentAnswer,
        responses=_READ_ERRORS,
        dependencies=guard,
        summary="Newest events",
    )
    async def recent_events(
        n: int = Query(20, ge=1, description="How many; capped at 200."),
        source: str | None = Query(None, description="Only events from this source."),
        hours: float = Query(
            DEFAULT_HOURS, gt=0, description="Only events from the last N hours (above 0)."
        ),
    ) -> dict[str, Any]:
        """The newest events, newest first."""
        events = await intake.read(None, n, source, hours)
        return {"events": events, "count": len(events)}

    @app.get(
        "/query",
        response_model=QueryAnswer,
        responses=_READ_ERRORS,
        dependencies=guard,
        summary="Search events",
    )
    async def query_events(
        q: str = Query(
            ..., pattern=NOT_BLANK, description="Case-insensitive text; must not be blank."
        ),
        limit: int = Query(20, ge=1, description="How many; capped at 200."),
        source: str | None = Query(None, description="Only events from this source."),
        hours: float = Query(
            DEFAULT_HOURS, gt=0, description="Only events from the last N hours (above 0)."
        ),
    ) -> dict[str, Any]:
        """Events whose content, title, tags or workspace contain ``q``, newest first."""
        if not q.strip():
            raise _Reject(400, "q must not be blank")
        events = await intake.read(q, limit, source, hours)
        return {"query": q, "events": events, "count": len(events)}

    return app
