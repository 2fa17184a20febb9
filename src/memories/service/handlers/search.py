"""Handlers for search, retrieve and ask.

- ``search`` answers from the in-memory index under the service lock.
- ``retrieve`` selects the best chunks, files a delivery intent naming their assets (no
  content), and returns them once the intent is durable.
- ``ask`` selects the chunks and, when an answer model is configured, files an intent naming
  the sources *before* inference and leaves the model call to run outside the service lock
  (:mod:`memories.service.deferred`). Back under the lock, after the service checked the
  unlock generation and authorized the request again, the finish step re-checks every source's
  revision stamp (still current, not private, deleted or conflicted), validates the answer's
  citations against the sources and records the outcome with the delivered source ids, never
  the question, the answer or a key. Without a configured model, ``ask`` answers at once with
  the best sentences of the sources (``answer_mode: "extractive"``), cited and validated the
  same way.

All three rank with the default rerank (:mod:`memories.search.rerank`) unless the request
turns it off. With ``[rag] rerank_url`` configured, the bounded candidate set then goes to the
learned reranker: an intent naming the candidates is filed, the call runs outside the lock,
and the finish step ranks again under the lock (so what is delivered reflects the index and
access as they are now) and applies the learned scores to the chunks that were scored. When
the call fails, the default rerank's order is used and the response says why
(``rerank_error``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, assert_never

from memories.errors import ConflictError, DeniedError, MemoriesError, NotFoundError
from memories.rag import (
    Generator,
    Reranker,
    Source,
    build_messages,
    extractive_answer,
    validate_citations,
)
from memories.search import Hit, IndexStatus, Mode, Query, VectorPlan, tokenize
from memories.search.ranking import relearn
from memories.search.rerank import RERANK_DEPTH
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

__all__ = ["ASK_DONE", "ASK_INTENT", "RERANK_INTENT", "RETRIEVE_INTENT", "handle"]

RETRIEVE_INTENT: Final = "rag.retrieve"
RERANK_INTENT: Final = "rag.rerank"
ASK_INTENT: Final = "rag.ask"
ASK_DONE: Final = "rag.ask.done"
#: What an extractive answer's ``model`` field and audit entries name.
EXTRACTIVE: Final = "extractive"
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
            return _search(core, request, access)
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


RerankUsed = Literal["learned", "default", "none"]


@dataclass(frozen=True)
class Ranking:
    """What ranking produced: the hits and how they were ranked."""

    hits: list[Hit]
    status: IndexStatus
    query: Query
    mode: str  # the first stage used
    vector_error: str | None  # why the query could not be embedded, or None
    rerank: RerankUsed
    rerank_error: str | None = None  # why the learned rerank was not used, or None

    def describe(self, response: dict[str, Any]) -> dict[str, Any]:
        """``response`` with how it was ranked (``mode``, ``rerank`` and the reasons)."""
        response["mode"] = self.mode
        response["rerank"] = self.rerank
        if self.vector_error is not None:
            response["vector_error"] = self.vector_error
        if self.rerank_error is not None:
            response["rerank_error"] = self.rerank_error
        return response


Ranked = Callable[[Ranking], dict[str, Any]]


def _reranker(core: Core) -> tuple[Reranker | None, str | None]:
    """The configured learned reranker, or None and why not (None: none is configured)."""
    try:
        return core.rag.reranker(), None
    except MemoriesError as exc:  # a wrong [rag] table: the default rerank, with why
        return None, f"the learned rerank is not available ({exc.message})"


def _ranked(
    core: Core,
    text: str,
    *,
    vault: str | None,
    kind: Kind | None,
    limit: int,
    mode: Mode,
    rerank: bool,
    caller: str,
    then: Ranked,
) -> dict[str, Any]:
    """Rank ``text`` and pass the :class:`Ranking` to ``then``. The slow parts run outside
    the service lock as deferred steps: first the query's vector when it must be computed,
    then the learned rerank when one is configured (and ``rerank`` is on).

    Raises what ``SearchCache.search`` raises; a failing embedder or reranker does not raise:
    the ranking falls back (keywords, the default rerank) and says why.
    """
    domain = core.domain()

    def search(
        plan: VectorPlan | None, vector: Vector | None, depth: int
    ) -> tuple[list[Hit], IndexStatus, Query, Mode]:
        return core.search.search(
            core.domain(),
            text,
            vault=vault,
            kind=kind,
            limit=depth,
            mode=mode,
            plan=plan,
            vector=vector,
            rerank=rerank,
        )

    def run(plan: VectorPlan | None, vector: Vector | None, error: str | None) -> dict[str, Any]:
        reranker, why = _reranker(core) if rerank else (None, None)
        depth = limit if reranker is None else max(limit, RERANK_DEPTH)
        hits, status, query, used = search(plan, vector, depth)
        settled: RerankUsed = "default" if rerank else "none"
        if reranker is None or len(hits) < 2:
            return then(Ranking(hits[:limit], status, query, used, error, settled, why))
        learned = reranker
        candidates = hits
        # The candidates' text leaves for the rerank endpoint: an intent naming them first.
        core.request_tickets.append(
            core.intents.file(
                RERANK_INTENT,
                {
                    "op": "rerank",
                    "vault": status.vault,
                    "sources": ",".join(h.summary.id for h in candidates),
                    "caller": caller,
                    "model": learned.model,
                },
            )
        )
        documents = [f"{h.summary.title}\n{h.passage}" for h in candidates]
        question = query.text

        def work() -> tuple[dict[int, float] | None, str | None]:
            try:
                return learned.rerank(question, documents, len(documents)), None
            except MemoriesError as exc:  # the search is still answered, by the default order
                return None, exc.message

        def finish(
            result: tuple[dict[int, float] | None, str | None], access: Access
        ) -> dict[str, Any]:
            scores, failure = result
            # Rank again under the lock: what is delivered reflects the index as it is now.
            fresh, status, query, used = search(plan, vector, depth)
            if scores is None:
                reason = f"the learned rerank failed, so the default rerank was used: {failure}"
                return then(Ranking(fresh[:limit], status, query, used, error, "default", reason))
            relevance = {
                (candidates[at].summary.id, candidates[at].chunk): score
                for at, score in scores.items()
            }
            ranked = relearn(fresh, relevance, limit)
            return then(Ranking(ranked, status, query, used, error, "learned"))

        core.deferred = Deferred(work, finish, lambda failure: None)
        return {}

    plan = None if mode == "bm25" else core.search.vector_plan(domain, text, vault, mode=mode)
    if plan is None or plan.vector is not None:
        return run(plan, None if plan is None else plan.vector, None)
    found = plan

    def embed() -> tuple[Vector | None, str | None]:
        try:
            return found.embed(), None
        except MemoriesError as exc:  # the query is still answered, by keywords
            return None, exc.message

    def embedded(result: tuple[Vector | None, str | None], access: Access) -> dict[str, Any]:
        vector, error = result
        if vector is not None:
            core.search.remember(found, vector)
        return run(found, vector, error)

    core.deferred = Deferred(embed, embedded, lambda error: None)
    return {}


def _search(core: Core, request: SearchQueryRequest, access: Access) -> dict[str, Any]:
    def respond(ranking: Ranking) -> dict[str, Any]:
        return ranking.describe(
            {
                "results": [hit.to_dict() for hit in ranking.hits],
                "index": ranking.status.to_dict(),
                "query": _query_view(ranking.query),
            }
        )

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=request.kind,
        limit=request.limit,
        mode=request.mode,
        rerank=request.rerank,
        caller=access.caller.namespace,
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
    def respond(ranking: Ranking) -> dict[str, Any]:
        sources = _sources(ranking.hits)
        if sources:
            core.request_tickets.append(
                core.intents.file(
                    RETRIEVE_INTENT,
                    _details("retrieve", ranking.status.vault, sources, access.caller.namespace),
                )
            )
        return ranking.describe(
            {
                "chunks": [s.to_dict() for s in sources],
                "index": ranking.status.to_dict(),
                "query": _query_view(ranking.query),
            }
        )

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=None,
        limit=request.limit,
        mode=request.mode,
        rerank=request.rerank,
        caller=access.caller.namespace,
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
    # A wrong [rag] table fails here, before anything is read; no model at all is no error.
    generator = core.rag.configured_generator()

    def respond(ranking: Ranking) -> dict[str, Any]:
        sources = _sources(ranking.hits)
        vault_id = ranking.status.vault
        if generator is None:
            return ranking.describe(_extract(core, request, access, sources, ranking, vault_id))
        return _generate(core, request, access, generator, sources, ranking)

    return _ranked(
        core,
        request.query,
        vault=request.vault,
        kind=None,
        limit=request.limit,
        mode="hybrid",
        rerank=True,
        caller=access.caller.namespace,
        then=respond,
    )


def _extract(
    core: Core,
    request: AskRequest,
    access: Access,
    sources: list[Source],
    ranking: Ranking,
    vault_id: str,
) -> dict[str, Any]:
    """The extractive answer: the sources' best sentences, each cited, validated like a
    model's answer; the intent naming the sources is durable before they are delivered."""
    response: dict[str, Any] = {
        "answer": "",
        "citations": [],
        "sources": [],
        "dropped_citations": [],
        "model": None,
        "answer_mode": EXTRACTIVE,
    }
    if not sources:
        response["reason"] = "nothing in the vault matches the question"
        return response
    core.request_tickets.append(
        core.intents.file(
            ASK_INTENT,
            _details("ask", vault_id, sources, access.caller.namespace, model=EXTRACTIVE),
        )
    )
    by_number = {s.n: s for s in sources}
    checked = validate_citations(
        extractive_answer(ranking.query.tokens, sources, tokenize), by_number
    )
    response.update(
        answer=checked.text,
        citations=[by_number[n].to_dict() for n in checked.cited],
        sources=[s.to_dict() for s in sources],
        dropped_citations=list(checked.dropped),
    )
    return response


def _generate(
    core: Core,
    request: AskRequest,
    access: Access,
    generator: Generator,
    sources: list[Source],
    ranking: Ranking,
) -> dict[str, Any]:
    """File the intent naming ``sources`` and leave the model call to run outside the lock."""
    caller = access.caller.namespace
    vault_id = ranking.status.vault
    if not sources:
        return ranking.describe(
            {
                "answer": "",
                "citations": [],
                "sources": [],
                "dropped_citations": [],
                "model": generator.model,
                "answer_mode": "model",
                "reason": "nothing in the vault matches the question; the model was not asked",
            }
        )
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
        return ranking.describe(
            {
                "answer": checked.text,
                "citations": [s.to_dict() for s in cited],
                "sources": [s.to_dict() for s in sources],
                "dropped_citations": list(checked.dropped),
                "model": generator.model,
                "answer_mode": "model",
            }
        )

    def failed(error: MemoriesError) -> None:
        record_failure(core.store, "ask", error, access.caller)

    core.deferred = Deferred(work, finish, failed)
    return {}
