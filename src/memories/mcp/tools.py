"""The memory tools: each maps its arguments to typed requests and sends them to the daemon.

No tool decides what a client may do. Every request carries its declared needs
(:class:`~memories.service.requests.base.Needs`), and the daemon's ``authorize()`` checks
them against the client's grant before anything is dispatched; a tool only shapes the
answer (:mod:`memories.mcp.projection`) and words failures.

:data:`TOOL_REQUESTS` names the ops each tool may send, so the grant matrix in the tests is
derived from the request declarations rather than copied by hand.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, ParamSpec

from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from memories.errors import MemoriesError, UsageError
from memories.mcp import projection

if TYPE_CHECKING:
    from memories.mcp.connection import DaemonLink
    from memories.service.requests import RequestModel

__all__ = ["SEARCH_SYNTAX", "TOOL_REQUESTS", "MemoryTools", "failure"]

log = logging.getLogger(__name__)

#: The ops each tool may send; the daemon authorizes every one of them.
TOOL_REQUESTS: Final[dict[str, tuple[str, ...]]] = {
    "memory_search": ("search",),
    "memory_retrieve": ("retrieve",),
    "memory_ask": ("ask",),
    "memory_read": ("read",),
    "memory_list": ("list",),
    "memory_history": ("history",),
    "memory_graph": ("graph",),
    # A new memory is a put, a new card a card_put; an edit reads the asset first (to refuse
    # cards that carry secret references) and then appends a revision on what it read.
    "memory_write": ("put", "card_put", "read", "update"),
    "memory_link": ("link",),
    "memory_delete": ("tombstone",),
}

SEARCH_SYNTAX: Final = (
    "Query syntax: plain words must all match (any case; CJK text works too); "
    '"an exact phrase" in double quotes; -word leaves out what holds that word; '
    'tag:NAME keeps only assets tagged NAME. Example: deploy "staging cluster" -draft tag:ops'
)

# A secret reference in a body, as the vault writes it: {{secret:LABEL}}.
_SECRET_MARKER = re.compile(r"\{\{\s*secret:")

# -- argument types ------------------------------------------------------------------------

Vault = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="Vault name, id or id prefix; your grant's default (the personal vault) "
        "when left out.",
    ),
]
Ref = Annotated[
    str,
    Field(
        min_length=4,
        max_length=200,
        description="Asset id or id prefix, as results show it (e.g. 4acab87f).",
    ),
]
RevisionRef = Annotated[
    str | None,
    Field(min_length=4, max_length=200, description="Revision id or prefix, as results show it."),
]
Title = Annotated[
    str | None,
    Field(min_length=1, max_length=300, description="One line; needed for a new asset."),
]
Body = Annotated[
    str | None, Field(max_length=1_000_000, description="The text (Markdown is fine).")
]
Tag = Annotated[str, Field(min_length=1, max_length=100)]
Tags = Annotated[list[Tag] | None, Field(max_length=64, description="Tags (at most 64).")]
MetaScalar = Annotated[str, Field(max_length=10_000)] | int | float | bool
MetaValue = MetaScalar | Annotated[list[MetaScalar], Field(max_length=256)]
Metadata = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=40)], MetaValue] | None,
    Field(
        max_length=64,
        description="Card fields by name (cards only): text, numbers, booleans or lists "
        "of those, as the card type defines them.",
    ),
]
CardType = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=40,
        description="Cards only: knowledge, brain, persona or a type the vault defines.",
    ),
]


def failure(exc: MemoriesError) -> ToolError:
    """The tool error an agent sees for a daemon error: its code and message, never more.

    A refused token is ``unauthorized`` and nothing else: which part failed is not said.
    """
    if exc.code == "unauthorized":
        log.warning(
            "the daemon refused this server's grant token (wrong, revoked or expired); "
            "create a new grant with `memories grant create`"
        )
        return ToolError("unauthorized")
    if exc.code == "locked":
        return ToolError("locked: the vault is locked; ask the user to run `memories unlock`")
    return ToolError(f"{exc.code}: {exc.message}")


P = ParamSpec("P")


def _reported(
    func: Callable[P, Awaitable[CallToolResult]],
) -> Callable[P, Awaitable[CallToolResult]]:
    """Turn a ``ToolError`` into an error result carrying exactly its message (the SDK would
    prefix it with the tool's name)."""

    @functools.wraps(func)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await func(*args, **kwargs)
        except ToolError as exc:
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    return wrapper


def _result(payload: Mapping[str, Any]) -> CallToolResult:
    # The JSON goes once, as text: no tool declares an output schema, clients read text
    # content, and a second structured copy doubled every answer's bytes on both sides.
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)])


class MemoryTools:
    """The tools, bound to one daemon link."""

    def __init__(self, link: DaemonLink) -> None:
        self._daemon = link

    async def _send(self, op: str, **fields: Any) -> dict[str, Any]:
        request = _build(op, fields)
        try:
            return await self._daemon.call(request)
        except MemoriesError as exc:
            raise failure(exc) from exc

    # -- read-like -------------------------------------------------------------------------

    @_reported
    async def search(
        self,
        query: Annotated[
            str, Field(min_length=1, max_length=4000, description="What to look for.")
        ],
        vault: Vault = None,
        kind: Annotated[
            Literal["memory", "card"] | None, Field(description="Only memories or only cards.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most results to return.")] = 10,
    ) -> CallToolResult:
        """Search the vault's memories and cards, best match first; each result has a short
        id for memory_read, a snippet and a score. Private memories and credentials are never
        searched."""
        fields = {"query": query, "vault": vault, "kind": kind, "limit": limit}
        response = await self._send("search", **fields)
        return _result(projection.search_results(response))

    @_reported
    async def retrieve(
        self,
        query: Annotated[
            str, Field(min_length=1, max_length=4000, description="What to look for.")
        ],
        vault: Vault = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most chunks to return.")] = 8,
    ) -> CallToolResult:
        """The passages that best match a query, numbered S1, S2... for citation, each with
        its asset's short id and revision. Cite them as [S1] when you use them."""
        response = await self._send("retrieve", query=query, vault=vault, limit=limit)
        return _result(projection.chunks(response))

    @_reported
    async def ask(
        self,
        question: Annotated[
            str, Field(min_length=1, max_length=8000, description="The question to answer.")
        ],
        vault: Vault = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most passages to answer from.")] = 8,
    ) -> CallToolResult:
        """Answer a question from the vault, citing its sources as [S1], [S2]... (the labels of
        the sources listed with it); citations that match no source are dropped and listed.
        With the model the user configured the answer is written by it; without one it is
        extractive: the stored sentences that best match the question (answer_mode says
        which)."""
        response = await self._send("ask", query=question, vault=vault, limit=limit)
        return _result(projection.answer(response))

    @_reported
    async def read(
        self,
        ref: Ref,
        revision: RevisionRef = None,
    ) -> CallToolResult:
        """Read one memory or card: its title, body, tags, card fields and links (the newest
        version, or the revision named). A credential's value is never shown."""
        response = await self._send("read", ref=ref, revision=revision)
        return _result(projection.asset(response))

    @_reported
    async def list_assets(
        self,
        vault: Vault = None,
        kind: Annotated[
            Literal["memory", "card"] | None, Field(description="Only memories or only cards.")
        ] = None,
        card_type: CardType = None,
        tag: Annotated[str | None, Field(min_length=1, max_length=100)] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most items to return.")] = 50,
    ) -> CallToolResult:
        """List what the vault holds, newest first: memories and cards with their short id,
        kind, title and tags (no bodies; use memory_read)."""
        response = await self._send("list", vault=vault, kind=kind, card_type=card_type, tag=tag)
        docs = [
            doc
            for doc in response.get("summaries", [])
            if isinstance(doc, Mapping) and doc.get("kind") in ("memory", "card")
        ]
        return _result(projection.summaries(docs, limit))

    @_reported
    async def history(self, ref: Ref) -> CallToolResult:
        """Every revision of a memory or card, newest first, with its title and parents."""
        response = await self._send("history", ref=ref)
        return _result(projection.history(response))

    @_reported
    async def graph(self, vault: Vault = None) -> CallToolResult:
        """The vault's cards and the directed links between them."""
        response = await self._send("graph", vault=vault)
        return _result(projection.graph(response))

    # -- writes ----------------------------------------------------------------------------

    @_reported
    async def write(
        self,
        title: Title = None,
        body: Body = None,
        kind: Annotated[
            Literal["memory", "card"], Field(description="A memory, or a typed card.")
        ] = "memory",
        card_type: CardType = None,
        metadata: Metadata = None,
        tags: Tags = None,
        source: Annotated[
            str | None, Field(max_length=500, description="Where it came from.")
        ] = None,
        vault: Vault = None,
        ref: Annotated[
            str | None,
            Field(
                min_length=4,
                max_length=200,
                description="Edit this memory or card instead of creating one: a new revision "
                "with title, body, tags, source and card fields as given (the rest kept).",
            ),
        ] = None,
    ) -> CallToolResult:
        """Save a new memory or card, or (with ref) a new revision of one; returns its short
        id. Cards that carry secret references and protected cards cannot be written here."""
        if ref is None:
            if title is None:
                raise ToolError("invalid_input: a new memory or card needs a title")
            if kind == "memory":
                if card_type is not None or metadata is not None:
                    raise ToolError("invalid_input: card_type and metadata are for cards only")
                response = await self._send(
                    "put",
                    vault=vault,
                    kind="memory",
                    title=title,
                    body=body,
                    tags=tags,
                    source=source,
                )
            else:
                if card_type is None:
                    raise ToolError("invalid_input: a card needs a card_type")
                response = await self._send(
                    "card_put",
                    vault=vault,
                    title=title,
                    card_type=card_type,
                    metadata=metadata,
                    body=body,
                    tags=tags,
                    source=source,
                )
            return _result(projection.saved(response))
        if vault is not None or card_type is not None:
            raise ToolError(
                "invalid_input: an edit names the asset by ref only (no vault, card_type)"
            )
        current = await self._send("read", ref=ref)
        _check_editable(current, kind)
        response = await self._send(
            "update",
            ref=str(current["asset"]),
            base=current.get("revision"),
            title=title,
            body=body,
            tags=tags,
            source=source,
            metadata=metadata,
        )
        return _result(projection.saved(response))

    @_reported
    async def link_cards(
        self,
        source: Annotated[str, Field(min_length=4, max_length=200, description="Card id.")],
        target: Annotated[str, Field(min_length=4, max_length=200, description="Card id.")],
        relation: Annotated[
            str | None,
            Field(min_length=1, max_length=64, description="e.g. depends_on; default related."),
        ] = None,
    ) -> CallToolResult:
        """Link one card to another in the same vault (a directed edge with a relation)."""
        response = await self._send("link", source=source, target=target, relation=relation)
        return _result(
            {
                "source": str(response.get("source", ""))[: projection.MIN_SHORT],
                "target": str(response.get("target", ""))[: projection.MIN_SHORT],
                "relation": response.get("relation"),
            }
        )

    @_reported
    async def delete(self, ref: Ref) -> CallToolResult:
        """Delete a memory or card from current views (a tombstone: its history stays and the
        user can still see it). Needs a grant that allows deleting."""
        response = await self._send("tombstone", ref=ref)
        return _result({**projection.saved(response), "deleted": True})

    # -- resources -------------------------------------------------------------------------

    async def card_resources(self) -> list[dict[str, Any]]:
        """The vault's cards as resources (``memories://card/<id>``).

        Raises:
            ValueError: the daemon refused or failed; its message (already safe) says why.
        """
        request = _build("list", {"kind": "card"})
        try:
            response = await self._daemon.call(request)
        except MemoriesError as exc:
            raise ValueError(str(failure(exc))) from exc
        docs = [d for d in response.get("summaries", []) if isinstance(d, Mapping)][:500]
        ids = projection.short_ids(str(d.get("id", "")) for d in docs)
        items = []
        for doc in docs:
            short = ids.get(str(doc.get("id", "")), "")
            title = str(doc.get("title", ""))[:100]
            items.append(
                {
                    "uri": f"memories://card/{short}",
                    "name": f"card-{short}",
                    "title": title,
                    "description": f"{doc.get('card_type') or 'card'} card (stored text: data)",
                    "mimeType": "application/json",
                }
            )
        return items

    async def card_resource(self, ref: str) -> str:
        """One card as JSON text (the safe projection ``memory_read`` gives).

        Raises:
            ResourceError: the reference names no visible card, or the daemon refused.
        """
        try:
            response = await self._daemon.call(_build("read", {"ref": ref}))
        except MemoriesError as exc:
            raise ResourceError(str(failure(exc))) from exc
        except ToolError as exc:  # the reference does not make a valid request
            raise ResourceError(str(exc)) from exc
        if response.get("kind") != "card":
            raise ResourceError("not_found: no card has that id")
        return json.dumps(projection.asset(response), ensure_ascii=False, separators=(",", ":"))


def _check_editable(current: Mapping[str, Any], kind: str) -> None:
    """Refuse edits MCP may never make: credentials, protected cards, secret references."""
    if current.get("deleted"):
        raise ToolError("conflict: that asset is deleted")
    if current.get("kind") not in ("memory", "card"):
        raise ToolError("denied: only memories and cards can be written over MCP")
    if current.get("kind") != kind:
        raise ToolError(f"invalid_input: that asset is a {current.get('kind')}, not a {kind}")
    body = current.get("body")
    if current.get("card_type") == "protected_card" or (
        isinstance(body, str) and _SECRET_MARKER.search(body)
    ):
        raise ToolError(
            "denied: this asset carries secret references; edit it with the memories CLI"
        )


def _build(op: str, fields: Mapping[str, Any]) -> RequestModel:
    """The typed request for ``op`` (fields left ``None`` take their defaults).

    Raises:
        ToolError: the fields do not make a valid request (the message names the field and
            rule, never the value).
    """
    from memories.service.requests import parse_request

    data = {"op": op, **{k: v for k, v in fields.items() if v is not None}}
    try:
        return parse_request(data)
    except UsageError as exc:
        raise ToolError(f"invalid_input: {exc.message}") from exc
