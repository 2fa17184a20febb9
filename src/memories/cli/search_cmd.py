"""search: ranked results with highlighted snippets; never credentials, files or private content."""

from __future__ import annotations

from typing import Any, Literal

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors, vault_option
from memories.cli.render import clean_line, console, emit_json

__all__ = ["snippet_text"]

_SNIPPET_CHARS = 240
_KINDS: dict[str, Literal["memory", "card"]] = {"memory": "memory", "card": "card"}
_MODES: dict[str, Literal["bm25", "vector", "hybrid"]] = {
    "bm25": "bm25",
    "vector": "vector",
    "hybrid": "hybrid",
}


def snippet_text(snippet: dict[str, Any]) -> Text:
    """A result's snippet as plain text (one line, controls made visible) with the matched
    spans in bold."""
    raw = str(snippet.get("text", ""))
    # Highlights are offsets into the raw text; cleaning is per character so they still hold
    # wherever no control character precedes them (then the bold is simply left off).
    flat = raw.replace("\n", " ").replace("\t", " ")
    shown = Text(clean_line(flat, limit=_SNIPPET_CHARS + 4))
    if len(shown.plain) == len(flat):
        for span in snippet.get("highlights", []):
            start, end = int(span[0]), int(span[1])
            if 0 <= start < end <= len(flat):
                shown.stylize("bold yellow", start, end)
    return shown


@cli.command("search")
@click.argument("query")
@vault_option
@click.option("--kind", type=click.Choice(["memory", "card"]), help="Only this kind.")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector"]),
    default="hybrid",
    show_default=True,
    help="hybrid: keywords fused with meaning (vectors); bm25: keywords only; vector: meaning.",
)
@click.option(
    "--no-rerank",
    is_flag=True,
    help="Keep the first stage's order: no coverage/phrase rerank and no learned rerank.",
)
@json_option
@reports_errors
def search_cmd(
    query: str,
    vault: str | None,
    kind: str | None,
    limit: int,
    mode: str,
    no_rerank: bool,
    as_json: bool,
) -> None:
    """Search memories and cards; the best matches first, with the matching passage.

    Words match in any order (more matches rank higher); "an exact phrase" must appear as
    written; -word leaves out what holds word; tag:NAME keeps only that tag. Chinese and
    Japanese text is segmented into words, so a two-character query finds longer compounds.
    Hybrid search also finds passages that say the same in other words, using the sentence
    models bundled with memories (nothing is downloaded); until they have read the vault it
    falls back to keywords. The best 50 are then reranked: those holding more of the query's
    words (in the title above all) and the exact query or a quoted phrase come first, or, with
    rerank_url set in [rag], a learned reranker orders them (its failure falls back to the
    built-in rerank, with a note). Credentials, files and private memories are never searched.

    \b
    Examples:
      memories search "connection pool" timeout
      memories search 向量检索 --kind card
      memories search deploy -staging tag:ops --json
    """
    from memories.service.requests import SearchQueryRequest

    response = call(
        SearchQueryRequest(
            op="search",
            query=query,
            vault=vault,
            kind=None if kind is None else _KINDS[kind],
            limit=limit,
            mode=_MODES[mode],
            rerank=not no_rerank,
        )
    )
    if as_json:
        emit_json(response)
        return
    results = response.get("results", [])
    if not results:
        console.print("no matches")
    for hit in results:
        summary = hit["summary"]
        head = Text()
        head.append(str(summary["short_id"]), style="cyan")
        head.append(f"  {summary['kind']}  ")
        head.append(clean_line(summary["title"]), style="bold")
        tags = summary.get("tags") or []
        if tags:
            head.append("  " + " ".join(f"#{clean_line(t, 40)}" for t in tags), style="dim")
        console.print(head)
        console.print(Text("    ").append(snippet_text(hit["snippet"])))
    index = response.get("index", {})
    truncated = index.get("truncated")
    if truncated:
        console.print(Text(f"note: {clean_line(truncated, 200)}", style="dim"))
    rerank_error = response.get("rerank_error")
    if rerank_error:
        console.print(Text(f"note: {clean_line(str(rerank_error), 300)}", style="dim"))
    if mode != "bm25" and response.get("mode") == "bm25":
        why = response.get("vector_error") or index.get("vectors")
        if not why and index.get("pending"):
            why = f"{index['pending']} chunks are still being read by the sentence model"
        if why:
            console.print(Text(f"note: keywords only: {clean_line(str(why), 200)}", style="dim"))
