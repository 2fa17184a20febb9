"""ask and retrieve: cited answers (from a configured model, or extractive without one) and the
cited chunks behind them."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors, vault_option
from memories.cli.render import clean_line, console, emit_json

__all__: list[str] = []

#: A model may take a while to answer; the daemon's own timeout (``[rag] timeout_seconds``)
#: and retries bound the call, this only keeps the CLI from giving up first.
_ASK_TIMEOUT = 15 * 60.0


def _source_line(chunk: dict[str, Any]) -> Text:
    line = Text()
    line.append(f"[S{chunk['n']}] ", style="bold")
    line.append(str(chunk["asset"]), style="cyan")
    line.append(f"  {chunk['kind']}  ")
    line.append(clean_line(str(chunk["title"])), style="bold")
    line.append(f"  rev {chunk['revision']}", style="dim")
    return line


@cli.command("retrieve")
@click.argument("query")
@vault_option
@click.option("--limit", type=click.IntRange(1, 50), default=8, show_default=True)
@click.option("--no-rerank", is_flag=True, help="Keep the first stage's order (no rerank).")
@json_option
@reports_errors
def retrieve_cmd(query: str, vault: str | None, limit: int, no_rerank: bool, as_json: bool) -> None:
    """Show the chunks that best match QUERY, numbered for citation, with their asset and
    revision. This is what `memories ask` sends to the model and what agents receive.

    Credentials, files and private memories are never retrieved.

    \b
    Examples:
      memories retrieve "connection pool timeout"
      memories retrieve 部署 --limit 3 --json
    """
    from memories.service.requests import RetrieveRequest

    response = call(
        RetrieveRequest(op="retrieve", query=query, vault=vault, limit=limit, rerank=not no_rerank)
    )
    if as_json:
        emit_json(response)
        return
    chunks = response.get("chunks", [])
    if not chunks:
        console.print("no matches")
    for chunk in chunks:
        console.print(_source_line(chunk))
        for line in str(chunk["text"]).splitlines()[:12]:
            console.print(Text("    " + clean_line(line, 200)))


@cli.command("ask")
@click.argument("question")
@vault_option
@click.option(
    "--limit",
    type=click.IntRange(1, 50),
    default=8,
    show_default=True,
    help="How many chunks the model answers from.",
)
@json_option
@reports_errors
def ask_cmd(question: str, vault: str | None, limit: int, as_json: bool) -> None:
    """Answer QUESTION from your memories, citing them as [S1], [S2] ...

    The best matching chunks go to the answer model set in the [rag] table of
    ~/.config/memories/config.toml (generate_url: an OpenAI-compatible /v1/chat/completions
    URL such as a local Ollama's; generate_model: the model's name). Every citation in the
    answer is checked against the chunks sent; invalid ones are removed and reported. The
    check covers references, not whether the prose is right.

    Without an answer model the answer is extractive: the sentences of the best chunks that
    hold the most of the question's words, each cited, and nothing leaves the machine.

    \b
    Examples:
      memories ask "how do we rotate the staging database password?"
      memories ask 部署流程是什么 --json
    """
    from memories.service.requests import AskRequest

    response = call(
        AskRequest(op="ask", query=question, vault=vault, limit=limit), timeout=_ASK_TIMEOUT
    )
    if as_json:
        emit_json(response)
        return
    extractive = response.get("answer_mode") == "extractive"
    if extractive:
        console.print(
            Text(
                "No answer model is configured, so this answer is extractive: the best-matching "
                "sentences of your memories, quoted as stored.",
                style="dim",
            )
        )
    reason = response.get("reason")
    if reason:
        console.print(clean_line(str(reason), 200))
        return
    for line in str(response.get("answer", "")).splitlines() or [""]:
        console.print(Text(clean_line(line, 2000)))
    citations = response.get("citations", [])
    if citations:
        console.print(Text("\nsources:", style="dim"))
        for chunk in citations:
            console.print(_source_line(chunk))
    dropped = response.get("dropped_citations", [])
    if dropped:
        shown = ", ".join(clean_line(str(d), 12) for d in dropped[:10])
        console.print(
            Text(f"note: removed citations that name no source sent: {shown}", style="dim")
        )
    model = response.get("model")
    if model:
        console.print(Text(f"model: {clean_line(str(model), 100)}", style="dim"))
    elif extractive:
        console.print(
            Text(
                "for written answers, set generate_url and generate_model in [rag] of config.toml",
                style="dim",
            )
        )
    rerank_error = response.get("rerank_error")
    if rerank_error:
        console.print(Text(f"note: {clean_line(str(rerank_error), 300)}", style="dim"))


@cli.group("rag")
def rag_group() -> None:
    """The search index behind retrieve and ask: what it holds and what is embedded."""


@rag_group.command("status")
@vault_option
@json_option
@reports_errors
def rag_status_cmd(vault: str | None, as_json: bool) -> None:
    """Show how many chunks are indexed, embedded and waiting for the sentence model, and
    which answer model is configured. Reading a vault starts its indexing."""
    from memories.service.requests import RagStatusRequest

    response = call(RagStatusRequest(op="rag_status", vault=vault))
    if as_json:
        emit_json(response)
        return
    index = response["index"]
    console.print(
        f"{index['assets']} memories, {index['chunks']} chunks indexed, "
        f"{index['embedded']} embedded, {index['pending']} waiting"
    )
    for key in ("truncated", "vectors"):
        if index.get(key):
            console.print(Text(f"note: {clean_line(str(index[key]), 200)}", style="dim"))
    generator = response.get("generator")
    # Plain text: "[rag]" (or brackets in a model's name) must not be read as rich markup.
    console.print(
        Text(
            f"answer model: {clean_line(str(generator), 100)}"
            if generator
            else "answer model: none configured, answers are extractive (set generate_url in "
            "[rag] of config.toml for written ones)"
        )
    )
