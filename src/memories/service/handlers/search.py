"""Handlers for search, retrieve and ask.

- ``search`` answers from the in-memory index under the service lock.
- ``retrieve`` selects the best chunks, files a delivery intent naming their assets (no
  content), and returns them once the intent is durable.
- ``ask`` checks that an answer model is configured, selects the chunks, files an intent
  naming the sources *before* inference, and leaves the model call to run outside the service
  lock (:mod:`memories.service.deferred`). Back under the lock, after the service checked the
  unlock generation and authorized the request again, the finish step re-checks every source's
  revision stamp (still current, not private, deleted or conflicted), validates the answer's
  citations against the sources and records the outcome with the delivered source ids, never
  the question, the answer or a key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, assert_never

from memories.errors import ConflictError, DeniedError, MemoriesError, NotFoundError
from memories.rag import Generator, Source, build_messages, validate_citations
from memories.search import Hit, IndexStatus, Mode, Query, VectorPlan
from memories.service.access import Access
from memories.service.audit import record_failure
from memories.service.core import Core
from memories.service.deferred import Deferred
from memories.service.requests import (
    AskRequest,
    RagStatusRequest,
    RetrieveRequest,
    SearchQueryRequest,
    SearchRequest,
)
from memories.views.format import short_ids
from memories.views.kinds import Kind

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = ["ASK_DONE", "ASK_INTENT", "RETRIEVE_INTENT", "handle"]

RETRIEVE_INTENT: Final = "rag.retrieve"
ASK_INTENT: Final = "rag.ask"
ASK_DONE: Final = "rag.ask.done"
#: What a chunk may carry out (chunks are at most 1,200 characters; this is a backstop).
MAX_CHUNK_CHARS: Final = 2000

_SOURCES_CHANGED = (
    "a source changed while the answer was being written; nothing was delivered, ask again"
)


def handle(core: Core, request: SearchRequest, access: Access) -> dict[str, Any]:
    """Answer a search, a retrieve or an ask (whose model call the service runs later).

    Raises ``UsageError`` for a query without words, ``UnavailableError`` for an ask without
    a configured model, and what ``SearchCache.search`` raises.
    """
    match request:
        case SearchQueryRequest():
            return _search(core, request)
        case RetrieveRequest():
            return _retrieve(core, request, access)
        case AskRequest():
            return _ask(core, request, access)
        case RagStatusRequest():
            return _status(core, request)
        case _:
            assert_never(request)


def _query_view(query: Query) -> dict[str, Any]:
    return {
        "tokens": list(query.tokens),
        "phrases": list(query.phrases),
        "excluded": list(query.excluded),
        "tags": list(query.tags),
        "truncated": query.truncated,
    }


Ranked = Callable[[list[Hit], IndexStatus, Query, str, str | None], dict[str, Any]]


def _ranked(
    core: Core,
    text: str,
    *,
    vault: str | None,
    kind: Kind | None,
    limit: int,
    mode: Mode,
    then: Ranked,
) -> dict[str, Any]:
    """Rank ``text`` and pass the hits to ``then``; when the query's vector must be computed,
    that runs outside the service lock first (a deferred step) and the ranking after it.

    ``then`` receives the hits, the index status, the parsed query, the mode used and why
    the query could not be embedded (or None). Raises what ``SearchCache.search`` raises.
    """
    domain = core.domain()

    def run(plan: VectorPlan | None, vector: Vector | None, error: str | None) -> dict[str, Any]:
        hits, status, query, used = core.search.search(
            core.domain(),
            text,
            vault=vault,
            kind=kind,
            limit=limit,
            mode=mode,
            plan=plan,
            vector=vector,
        )
        return then(hits, status, query, used, error)

    plan = None if mode == "bm25" else core.search.vector_plan(domain, text, vault, mode=mode)
    if plan is None or plan.vector is not None:
        return run(plan, None if plan is None else plan.vector, None)
    found = plan

    def work() -> tuple[Vector | None, str | None]:
        try:
            return found.embed(), None
        except MemoriesError as exc:  # the query is still answered, by keywords
            return None, exc.message

    def finish(result: tuple[Vector | None, str | None], access: Access) -> dict[str, Any]:
        vector, error = result
        if vector is not None:
            core.search.remember(found, vector)
        return run(found, vector, error)

    core.deferred = Deferred(work, finish, lambda error: None)
    return {}


def _search(core: Core, request: SearchQueryRequest) -> dict[str, Any]:
    def respond(
        hits: list[Hit], status: IndexStatus, query: Query, mode: str, error: str | None
    ) -> dict[str, Any]:
        response: dict[str, Any] = {
            "results": [hit.to_dict() for hit in hits],
            "index": status.to_dict(),
            "query": _query_view(query),
            "mode": mode,
        }
        if error is not None:
            response["vector_error"] = error
        return response

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=request.kind,
        limit=request.limit,
        mode=request.mode,
        then=respond,
    )


def _status(core: Core, request: RagStatusRequest) -> dict[str, Any]:
    index = core.search.index(core.domain(), request.vault)
    progress = core.search.worker.progress
    try:
        generator: str | None = core.rag.generator().model
    except MemoriesError:
        generator = None
    return {
        "index": index.status.to_dict(),
        "embedder": {
            "chunks": progress.chunks,
            "seconds": round(progress.seconds, 3),
            "last_failure": progress.last_failure,
        },
        "generator": generator,
    }


def _sources(hits: Sequence[Hit]) -> list[Source]:
    shorts = short_ids([hit.revision for hit in hits])
    return [
        Source(
            n=n,
            asset_id=hit.summary.id,
            asset=hit.summary.short_id,
            revision=hit.revision,
            short_revision=shorts[hit.revision],
            kind=hit.summary.kind,
            title=hit.summary.title,
            text=hit.passage[:MAX_CHUNK_CHARS],
            score=hit.score,
        )
        for n, hit in enumerate(hits, start=1)
    ]


def _details(
    op: str, vault: str, sources: Sequence[Source], caller: str, **extra: str | int | bool
) -> dict[str, str | int | bool]:
    details: dict[str, str | int | bool] = {
        "op": op,
        "vault": vault,
        "sources": ",".join(s.asset_id for s in sources),
        "caller": caller,
    }
    details.update(extra)
    return details


def _retrieve(core: Core, request: RetrieveRequest, access: Access) -> dict[str, Any]:
    def respond(
        hits: list[Hit], status: IndexStatus, query: Query, mode: str, error: str | None
    ) -> dict[str, Any]:
        sources = _sources(hits)
        if sources:
            core.request_tickets.append(
                core.intents.file(
                    RETRIEVE_INTENT,
                    _details("retrieve", status.vault, sources, access.caller.namespace),
                )
            )
        response: dict[str, Any] = {
            "chunks": [s.to_dict() for s in sources],
            "index": status.to_dict(),
            "query": _query_view(query),
            "mode": mode,
        }
        if error is not None:
            response["vector_error"] = error
        return response

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=None,
        limit=request.limit,
        mode=request.mode,
        then=respond,
    )


def _still_current(core: Core, vault_id: str, sources: Sequence[Source]) -> None:
    """Raises ``ConflictError`` unless every source is still the searchable revision it was."""
    domain = core.domain()
    for source in sources:
        try:
            state = domain.resolve_asset(source.asset_id)
        except (NotFoundError, DeniedError) as exc:
            raise ConflictError(_SOURCES_CHANGED) from exc
        if (
            state.newest != source.revision
            or state.vault_id != vault_id
            or state.private
            or state.deleted
            or state.conflicted
        ):
            raise ConflictError(_SOURCES_CHANGED)


def _ask(core: Core, request: AskRequest, access: Access) -> dict[str, Any]:
    generator = core.rag.generator()  # no model configured: fail before anything is read

    def respond(
        hits: list[Hit], status: IndexStatus, query: Query, mode: str, error: str | None
    ) -> dict[str, Any]:
        return _generate(core, request, access, generator, _sources(hits), status.vault, mode)

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=None,
        limit=request.limit,
        mode="hybrid",
        then=respond,
    )


def _generate(
    core: Core,
    request: AskRequest,
    access: Access,
    generator: Generator,
    sources: list[Source],
    vault_id: str,
    mode: str,
) -> dict[str, Any]:
    """File the intent naming ``sources`` and leave the model call to run outside the lock."""
    caller = access.caller.namespace
    if not sources:
        return {
            "answer": "",
            "citations": [],
            "sources": [],
            "dropped_citations": [],
            "model": generator.model,
            "mode": mode,
            "reason": "nothing in the vault matches the question; the model was not asked",
        }
    core.request_tickets.append(
        core.intents.file(
            ASK_INTENT, _details("ask", vault_id, sources, caller, model=generator.model)
        )
    )
    messages = build_messages(request.query, sources)
    by_number = {s.n: s for s in sources}

    def work() -> str:
        return generator.generate(messages)

    def finish(answer: str, again: Access) -> dict[str, Any]:
        _still_current(core, vault_id, sources)
        checked = validate_citations(answer, by_number)
        cited = [by_number[n] for n in checked.cited]
        core.request_tickets.append(
            core.intents.file(
                ASK_DONE,
                _details(
                    "ask",
                    vault_id,
                    cited,
                    again.caller.namespace,
                    model=generator.model,
                    dropped=len(checked.dropped),
                ),
            )
        )
        return {
            "answer": checked.text,
            "citations": [s.to_dict() for s in cited],
            "sources": [s.to_dict() for s in sources],
            "dropped_citations": list(checked.dropped),
            "model": generator.model,
            "mode": mode,
        }

    def failed(error: MemoriesError) -> None:
        record_failure(core.store, "ask", error, access.caller)

    core.deferred = Deferred(work, finish, failed)
    return {}
