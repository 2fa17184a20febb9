"""card types|put|define, link, unlink and graph: typed cards and the links between assets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table
from rich.text import Text

from memories.cli import cli
from memories.cli.assets_cmd import body_from
from memories.cli.common import (
    call,
    card_metadata,
    json_option,
    reports_errors,
    short_ref,
    vault_option,
)
from memories.cli.render import clean_line, console, emit_json, graph_tree
from memories.errors import UsageError

if TYPE_CHECKING:
    from memories.service.requests import FieldDefinition
    from memories.views.graph import Graph

__all__ = ["graph_from_dict", "parse_field"]

_FIELD_FLAGS = {"required": True, "optional": False}


def parse_field(text: str) -> FieldDefinition:
    """``name:type[:required]`` → a field definition for ``card_type_define``.

    Raises:
        UsageError: the text is not ``name:type`` optionally followed by ``:required`` or
            ``:optional``.
        pydantic.ValidationError: the name or type is too long or empty (``reports_errors``
            turns it into a usage error).
    """
    from memories.service.requests import FieldDefinition

    parts = [part.strip() for part in text.split(":")]
    if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
        raise UsageError("--field takes name:type or name:type:required, e.g. due:date:required")
    required = False
    if len(parts) == 3:
        if parts[2] not in _FIELD_FLAGS:
            raise UsageError("the third part of --field is required or optional")
        required = _FIELD_FLAGS[parts[2]]
    return FieldDefinition(name=parts[0], type=parts[1], required=required)


@cli.group()
def card() -> None:
    """Typed cards: memories with checked metadata fields.

    Built-in types: knowledge, brain, persona, protected_card. Define your own with
    `memories card define`.
    """


@card.command("types")
@vault_option
@json_option
@reports_errors
def card_types(vault: str | None, as_json: bool) -> None:
    """List the card types of a vault and their fields (* marks required ones).

    \b
    Example:
      memories card types
    """
    from memories.service.requests import CardTypesRequest

    response = call(CardTypesRequest(op="card_types", vault=vault))
    if as_json:
        emit_json(response)
        return
    types = [t for t in response.get("card_types", []) if isinstance(t, Mapping)]
    console.print(_types_table(types))


def _types_table(types: list[Mapping[str, Any]]) -> Table:
    table = Table(expand=False)
    table.add_column("type", no_wrap=True, style="cyan")
    table.add_column("fields")
    table.add_column("description", max_width=60)
    for item in types:
        fields = []
        for spec in item.get("fields", []):
            if isinstance(spec, Mapping):
                mark = "*" if spec.get("required") else ""
                fields.append(
                    f"{clean_line(spec.get('name'), 40)}{mark}:{clean_line(spec.get('type'), 20)}"
                )
        name = clean_line(item.get("name"), 40) + (" (built-in)" if item.get("builtin") else "")
        table.add_row(
            Text(name), Text(", ".join(fields)), Text(clean_line(item.get("description"), 500))
        )
    return table


@card.command("put")
@click.argument("title")
@click.option("--type", "card_type", required=True, help="The card type.")
@click.option(
    "--meta",
    "meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="A metadata field (repeatable), typed by the card type.",
)
@click.option("--body", help="The card's text (- reads standard input).")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option("--source", help="Where it comes from.")
@click.option("--private", is_flag=True, help="Only show it after `memories sudo`.")
@vault_option
@json_option
@reports_errors
def card_put(
    title: str,
    card_type: str,
    meta: tuple[str, ...],
    body: str | None,
    tags: tuple[str, ...],
    source: str | None,
    private: bool,
    vault: str | None,
    as_json: bool,
) -> None:
    """Save a new card called TITLE and print its short id.

    \b
    Examples:
      memories card put "Postgres upgrade" --type knowledge \\
          --meta topic=databases --meta confidence=0.9 --meta reviewed=2024-05-01
      memories card put "Reviewer" --type persona --meta name=rev --meta tone=terse
    """
    text = body_from(body, editor_ok=False) if body is not None else ""
    from memories.service.requests import CardPutRequest

    metadata = card_metadata(card_type, meta, vault)
    response = call(
        CardPutRequest(
            op="card_put",
            vault=vault,
            title=title,
            card_type=card_type,
            metadata=metadata,
            body=text or "",
            tags=list(tags) if tags else None,
            source=source,
            private=private,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))


@card.command("define")
@click.argument("name")
@click.option(
    "--field",
    "fields",
    multiple=True,
    required=True,
    metavar="NAME:TYPE[:required]",
    help="A field (repeatable). Types: string, text, integer, number, boolean, date, url, "
    "string_list.",
)
@click.option("--description", default="", help="What cards of this type are for.")
@vault_option
@json_option
@reports_errors
def card_define(
    name: str, fields: tuple[str, ...], description: str, vault: str | None, as_json: bool
) -> None:
    """Define a card type NAME with typed fields.

    \b
    Examples:
      memories card define recipe --field cuisine:string --field minutes:integer:required
      memories card define incident --field severity:integer:required --field when:date
    """
    from memories.service.requests import CardTypeDefineRequest

    response = call(
        CardTypeDefineRequest(
            op="card_type_define",
            vault=vault,
            name=name,
            fields=[parse_field(text) for text in fields],
            description=description,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(f"defined card type {clean_line(response.get('name', name), 40)}")


# -- links and the graph --------------------------------------------------------------------


@cli.command()
@click.argument("source")
@click.argument("target")
@click.option("--relation", help="What the link means, e.g. depends-on [default: related].")
@json_option
@reports_errors
def link(source: str, target: str, relation: str | None, as_json: bool) -> None:
    """Link SOURCE to TARGET (both in the same vault).

    \b
    Examples:
      memories link 1a2b3c4d 5e6f7a8b
      memories link 1a2b3c4d 5e6f7a8b --relation depends-on
    """
    from memories.service.requests import LinkRequest

    response = call(LinkRequest(op="link", source=source, target=target, relation=relation))
    if as_json:
        emit_json(response)
        return
    console.print(
        f"linked {short_ref(response, 'source')} → {short_ref(response, 'target')} "
        f"({clean_line(response.get('relation'), 40)})"
    )


@cli.command()
@click.argument("source")
@click.argument("target")
@click.option("--relation", help="Only remove links with this relation [default: related].")
@json_option
@reports_errors
def unlink(source: str, target: str, relation: str | None, as_json: bool) -> None:
    """Remove the link from SOURCE to TARGET.

    \b
    Example:
      memories unlink 1a2b3c4d 5e6f7a8b --relation depends-on
    """
    from memories.service.requests import UnlinkRequest

    response = call(UnlinkRequest(op="unlink", source=source, target=target, relation=relation))
    if as_json:
        emit_json(response)
        return
    removed = response.get("removed", 0)
    console.print(f"removed {removed} link{'s' if removed != 1 else ''}")


@cli.command()
@vault_option
@click.option("--dot", is_flag=True, help="Print Graphviz DOT (pipe it to `dot -Tsvg`).")
@json_option
@reports_errors
def graph(vault: str | None, dot: bool, as_json: bool) -> None:
    """Show how the assets of a vault link to each other.

    Only current, visible assets appear (no private ones unless elevated), and only links
    whose both ends are visible.

    \b
    Examples:
      memories graph
      memories graph --dot | dot -Tsvg > graph.svg
      memories graph --json
    """
    if dot and as_json:
        raise UsageError("choose one of --dot and --json")
    from memories.service.requests import GraphRequest

    response = call(GraphRequest(op="graph", vault=vault))
    if as_json:
        emit_json(response)
        return
    if dot:
        click.echo(graph_from_dict(response).to_dot(), nl=False)
        return
    if not response.get("nodes"):
        console.print("no assets to show")
        return
    console.print(graph_tree(response, title=f"vault {vault}" if vault else "personal vault"))


def graph_from_dict(doc: Mapping[str, Any]) -> Graph:
    """Rebuild the vault's ``Graph`` from its JSON form (for the DOT rendering).

    Raises:
        UsageError: the document does not describe a graph.
    """
    from memories.views.graph import Graph, GraphNode, Link
    from memories.views.kinds import parse_kind

    nodes = []
    edges = []
    for node in doc.get("nodes", []):
        if not isinstance(node, Mapping):
            raise UsageError("the daemon sent a malformed graph")
        card_type = node.get("card_type")
        nodes.append(
            GraphNode(
                id=str(node.get("id")),
                title=str(node.get("title", "")),
                card_type=card_type if isinstance(card_type, str) else None,
                kind=parse_kind(node.get("kind")),
                visible=True,
            )
        )
    for edge in doc.get("edges", []):
        if not isinstance(edge, Mapping):
            raise UsageError("the daemon sent a malformed graph")
        edges.append(
            Link(str(edge.get("source")), str(edge.get("target")), str(edge.get("relation")))
        )
    return Graph(nodes=tuple(nodes), edges=tuple(edges))
