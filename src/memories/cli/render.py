"""Human and JSON output for the memories command line.

Everything that came out of the vault is printed as plain ``Text`` (never as rich markup), with
terminal control characters made visible, so stored content cannot drive the user's terminal.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

__all__ = [
    "Column",
    "clean_line",
    "clean_text",
    "console",
    "diff_text",
    "emit_json",
    "error_console",
    "fingerprint",
    "fitted_table",
    "graph_tree",
    "history_table",
    "key_values",
    "short_ids",
    "summaries_table",
]

console = Console(highlight=False, soft_wrap=False)
error_console = Console(stderr=True, highlight=False)

# C0 and C1 controls apart from tab and line feed, plus the Unicode line separators.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_LINE_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def emit_json(value: object) -> None:
    """Print one JSON document on stdout (UTF-8, no ASCII escaping)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def _visible(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def clean_text(text: str) -> str:
    """``text`` with control characters other than tab and line feed shown as escapes."""
    return _CONTROL.sub(_visible, text)


def clean_line(text: object, limit: int = 80) -> str:
    """One line for a table cell: controls blanked, cut to ``limit`` characters."""
    line = _LINE_CONTROL.sub(" ", str(text)).strip() if text is not None else ""
    if len(line) > limit:
        return line[: limit - 1] + "…"
    return line


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """The shortest unambiguous prefix (at least 8 hex digits, ``sha256:`` dropped) of each id;
    the vault accepts these prefixes as references."""
    # Imported here: the vault package is heavy and `memories --help` should stay quick.
    from memories.views.format import short_ids as shortest

    return shortest(list(ids))


def _when(stamp: object) -> str:
    """``2024-05-01T12:34:56.789Z`` → ``2024-05-01 12:34`` (UTC, as stored)."""
    text = clean_line(stamp, 40)
    if len(text) >= 16 and text[10] == "T":
        return f"{text[:10]} {text[11:16]}"
    return text


def fingerprint(text: object) -> str:
    """A fingerprint shortened for display (``sha256:`` dropped, 12 hex digits); lists only,
    never to approve anything with."""
    value = clean_line(text, 100)
    if value.startswith("sha256:"):
        return value.removeprefix("sha256:")[:12]
    return value


def _tags(tags: object) -> str:
    if not isinstance(tags, list):
        return ""
    return clean_line(", ".join(str(tag) for tag in tags), 40)


@dataclass(frozen=True)
class Column:
    """A table column for :func:`fitted_table`: at most ``cap`` characters wide; the one
    ``flexible`` column takes what the terminal has left."""

    header: str
    cap: int = 40
    style: str = ""
    flexible: bool = False
    justify: Literal["left", "right"] = "left"


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[Text]]) -> Table:
    """A one-line-per-row table that fits the terminal: every column as wide as its widest
    cell (capped), the flexible column cut with an ellipsis to what remains."""
    widths = [
        min(col.cap, max([len(col.header), *(row[index].cell_len for row in rows)]))
        for index, col in enumerate(columns)
    ]
    for index, col in enumerate(columns):
        if col.flexible:
            others = sum(width for j, width in enumerate(widths) if j != index)
            # Each column costs its padding (2) and a border (1); the table one more border.
            room = console.width - others - 3 * len(columns) - 1
            widths[index] = max(min(widths[index], room), min(widths[index], 10))
    table = Table(expand=False)
    for col, width in zip(columns, widths, strict=True):
        table.add_column(
            col.header,
            width=width,
            no_wrap=True,
            overflow="ellipsis",
            style=col.style,
            justify=col.justify,
        )
    for row in rows:
        table.add_row(*row)
    return table


def summaries_table(summaries: Sequence[Mapping[str, Any]], *, show_vault: bool = False) -> Table:
    """A table of asset summaries: id, kind, title, tags, last change and flags."""
    columns = [Column("id", cap=64, style="cyan")]
    if show_vault:
        columns.append(Column("vault", cap=12))
    columns += [
        Column("kind", cap=28),
        Column("title", cap=200, flexible=True),
        Column("tags", cap=24),
        Column("updated", cap=16),
        Column("flags", cap=16, style="yellow"),
    ]
    vault_labels = short_ids([str(s.get("vault", "")) for s in summaries]) if show_vault else {}
    rows: list[list[Text]] = []
    for summary in summaries:
        kind = clean_line(summary.get("kind"), 12)
        if summary.get("card_type"):
            kind = f"{kind}:{clean_line(summary.get('card_type'), 24)}"
        flags = [
            name
            for name, on in (
                ("private", summary.get("private")),
                ("conflict", summary.get("conflicted")),
            )
            if on
        ]
        row = [Text(clean_line(summary.get("short_id") or summary.get("id"), 64))]
        if show_vault:
            row.append(Text(vault_labels.get(str(summary.get("vault", "")), "")))
        row += [
            Text(kind),
            Text(clean_line(summary.get("title"), 200)),
            Text(_tags(summary.get("tags"))),
            Text(_when(summary.get("updated_at"))),
            Text(" ".join(flags)),
        ]
        rows.append(row)
    return fitted_table(columns, rows)


def history_table(entries: Sequence[Mapping[str, Any]]) -> Table:
    """A table of revisions, newest first: revision, time, author, parents, title."""
    ids = [str(e.get("revision", "")) for e in entries]
    for entry in entries:
        parents = entry.get("parents")
        if isinstance(parents, list):
            ids.extend(str(p) for p in parents)
    shorts = short_ids(ids)
    rows: list[list[Text]] = []
    for entry in entries:
        author = entry.get("author")
        who = fingerprint(author.get("user")) if isinstance(author, Mapping) else ""
        parents = entry.get("parents")
        parent_text = (
            " ".join(shorts.get(str(p), "") for p in parents) if isinstance(parents, list) else ""
        )
        marks = []
        if entry.get("head"):
            marks.append("head")
        if entry.get("tombstone"):
            marks.append("deleted")
        title = Text(clean_line(entry.get("title"), 200))
        if marks:
            title.append(f" ({', '.join(marks)})", style="yellow")
        rows.append(
            [
                Text(shorts.get(str(entry.get("revision", "")), "")),
                Text(_when(entry.get("created_at"))),
                Text(who),
                Text(parent_text),
                title,
            ]
        )
    columns = [
        Column("revision", cap=64, style="cyan"),
        Column("time", cap=16),
        Column("author", cap=12),
        Column("parents", cap=40),
        Column("title", cap=200, flexible=True),
    ]
    return fitted_table(columns, rows)


def diff_text(diff: str) -> Text:
    """A unified diff with added lines green, removed lines red and hunk headers cyan."""
    out = Text()
    for line in diff.splitlines():
        shown = clean_text(line)
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(shown + "\n", style=style)
    return out


def key_values(rows: Iterable[tuple[str, object]]) -> Table:
    """A two-column grid of labels and values."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for label, value in rows:
        grid.add_row(label, Text(clean_line(_plain(value), 200)))
    return grid


def _plain(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def graph_tree(graph: Mapping[str, Any], title: str = "graph") -> Tree:
    """The link graph as a tree of outgoing links.

    Nodes without incoming links start the trees; a node reached again (a cycle or a second
    parent) is shown with ``(see above)`` and not expanded again, and nodes only reachable
    through a cycle start trees of their own, so every node is expanded exactly once.
    """
    nodes = [n for n in graph.get("nodes", []) if isinstance(n, Mapping)]
    edges = [e for e in graph.get("edges", []) if isinstance(e, Mapping)]
    by_id = {str(n.get("id")): n for n in nodes}
    shorts = short_ids(by_id)
    order = {node_id: index for index, node_id in enumerate(by_id)}
    children: dict[str, list[tuple[str, str]]] = {}
    incoming: set[str] = set()
    for edge in edges:
        source, target = str(edge.get("source")), str(edge.get("target"))
        if source in by_id and target in by_id:
            children.setdefault(source, []).append((target, str(edge.get("relation", ""))))
            incoming.add(target)
    for kids in children.values():
        kids.sort(key=lambda kid: (order[kid[0]], kid[1]))

    def label(node_id: str, relation: str | None) -> Text:
        node = by_id[node_id]
        text = Text()
        if relation and relation != "related":
            text.append(f"{clean_line(relation, 40)}: ", style="magenta")
        text.append(clean_line(node.get("title"), 80))
        detail = node.get("card_type") or node.get("kind")
        if detail:
            text.append(f" [{clean_line(detail, 24)}]", style="dim")
        text.append(f" {shorts[node_id]}", style="cyan")
        return text

    root = Tree(Text(title, style="bold"))
    expanded: set[str] = set()

    def walk(start: str) -> None:
        # Iterative, so a long chain of links cannot reach the recursion limit.
        stack: list[tuple[str, str | None, Tree]] = [(start, None, root)]
        while stack:
            node_id, relation, parent = stack.pop()
            text = label(node_id, relation)
            if node_id in expanded:
                text.append(" (see above)", style="dim")
                parent.add(text)
                continue
            expanded.add(node_id)
            branch = parent.add(text)
            for target, kid_relation in reversed(children.get(node_id, [])):
                stack.append((target, kid_relation, branch))

    for node_id in by_id:
        if node_id not in incoming:
            walk(node_id)
    for node_id in by_id:
        if node_id not in expanded:
            walk(node_id)
    return root
