"""put, show, edit, ls, history, diff, rm, conflicts and resolve: memories and their history."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click
from rich.rule import Rule
from rich.text import Text

from memories.cli import cli
from memories.cli.common import (
    call,
    card_metadata,
    json_option,
    read_stdin_text,
    reports_errors,
    short_ref,
    vault_option,
)
from memories.cli.render import (
    clean_line,
    clean_text,
    console,
    diff_text,
    emit_json,
    error_console,
    fingerprint,
    history_table,
    key_values,
    summaries_table,
)
from memories.errors import UsageError

__all__ = ["body_from", "default_title", "print_view"]

TITLE_CHARS = 80

tag_option = click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
meta_option = click.option(
    "--meta",
    "meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="A card metadata field (repeatable), typed by the card type: numbers, true/false, "
    "YYYY-MM-DD dates, comma-separated lists. A blank value clears the field.",
)
source_option = click.option("--source", help="Where it comes from (a URL, a file, an agent).")


def default_title(body: str) -> str:
    """The first non-blank line of ``body`` without Markdown heading marks, cut to 80 chars."""
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:TITLE_CHARS].rstrip()
    return ""


def body_from(
    text: str | None, *, initial: str = "", piped_ok: bool = True, editor_ok: bool = True
) -> str | None:
    """The body a command works on: TEXT (``-`` reads standard input), else standard input
    when it is piped and ``piped_ok``, else ``$EDITOR`` on ``initial``. None when the editor
    was left without a change (or ``editor_ok`` is false).

    Raises:
        UsageError: standard input is not UTF-8, or an editor is needed but there is no
            terminal and neither $VISUAL nor $EDITOR is set.
    """
    if text == "-":
        return read_stdin_text()
    if text is not None:
        return text
    interactive = sys.stdin.isatty()
    if piped_ok and not interactive:
        return read_stdin_text()
    if not editor_ok:
        return None
    if not interactive and not (os.environ.get("VISUAL") or os.environ.get("EDITOR")):
        raise UsageError("give the text (or - to read standard input), or set $EDITOR")
    edited = click.edit(initial, extension=".md", require_save=True)
    if edited is None or edited == initial:
        return None
    return edited


def _tags(tags: tuple[str, ...]) -> list[str] | None:
    return list(tags) if tags else None


# -- put ------------------------------------------------------------------------------------


@cli.command()
@click.argument("text", required=False)
@click.option("--title", help=f"The title [default: the first line, cut to {TITLE_CHARS}].")
@tag_option
@click.option("--card-type", help="Save a card of this type (see `memories card types`).")
@meta_option
@click.option(
    "--private",
    is_flag=True,
    help="Only show it after `memories sudo`. Give private text on standard input (TEXT -, or "
    "a pipe) or in $EDITOR: TEXT on the command line is visible to other local users.",
)
@vault_option
@source_option
@json_option
@reports_errors
def put(
    text: str | None,
    title: str | None,
    tags: tuple[str, ...],
    card_type: str | None,
    meta: tuple[str, ...],
    private: bool,
    vault: str | None,
    source: str | None,
    as_json: bool,
) -> None:
    """Save a new memory and print its short id.

    The body is TEXT, or standard input when it is piped (or TEXT is -), or else what you
    write in $EDITOR. Keep private text off the command line, where every local user can
    read it (ps, /proc): pipe it, or leave TEXT out and write it in $EDITOR.

    \b
    Examples:
      memories put "The staging DB is rebuilt every Sunday" --tag ops
      git log -1 --format=%B | memories put --title "Why we pinned httpx" --source git
      memories put "Prefers small PRs" --card-type persona --meta name=reviewer
      memories put --private --title "Salary review" < salary-notes.md
      memories put --private                      # write it in $EDITOR
    """
    if private and text not in (None, "-"):
        error_console.print(
            "warning: private text given on the command line is visible to other local "
            "users while the command runs (ps, /proc); pipe it on standard input "
            "(`memories put --private -`) or leave TEXT out to write it in $EDITOR",
            markup=False,
            highlight=False,
        )
    body = body_from(text)
    if body is None or not body.strip():
        if card_type is None or not title:
            raise UsageError(
                "the memory is empty; give TEXT, pipe it on standard input, or run "
                "`memories put` in a terminal to write it in $EDITOR"
            )
        body = body or ""
    chosen_title = title if title is not None else default_title(body)
    if not chosen_title.strip():
        raise UsageError("the memory needs a title; give --title")
    if meta and card_type is None:
        raise UsageError("--meta applies to cards; add --card-type (see `memories card types`)")
    from memories.service.requests import CardPutRequest, PutRequest

    request: CardPutRequest | PutRequest
    if card_type is not None:
        request = CardPutRequest(
            op="card_put",
            vault=vault,
            title=chosen_title,
            card_type=card_type,
            metadata=card_metadata(card_type, meta, vault),
            body=body,
            tags=_tags(tags),
            source=source,
            private=private,
        )
    else:
        request = PutRequest(
            op="put",
            vault=vault,
            title=chosen_title,
            body=body,
            tags=_tags(tags),
            source=source,
            private=private,
        )
    response = call(request)
    if as_json:
        emit_json(response)
        return
    console.print(short_ref(response))


# -- show -----------------------------------------------------------------------------------


@cli.command()
@click.argument("ref")
@click.option("--revision", help="Show this revision (id or prefix) instead of the newest.")
@json_option
@reports_errors
def show(ref: str, revision: str | None, as_json: bool) -> None:
    """Show a memory, card, file or credential by its id or id prefix.

    Private memories need `memories sudo` first. A credential's secret is never shown; a
    file's payload is saved with `memories file get`.

    \b
    Examples:
      memories show 1a2b3c4d
      memories show 1a2b3c4d --revision 9f8e7d6c --json
    """
    from memories.service.requests import ReadRequest

    view = call(ReadRequest(op="read", ref=ref, revision=revision))
    if as_json:
        emit_json(view)
        return
    print_view(view)


def print_view(view: Mapping[str, Any]) -> None:
    """Render an asset view for people: a header, metadata, links and the body."""
    title = clean_line(view.get("title") or "(deleted)", 300)
    console.print(Text(title, style="bold"))
    kind = clean_line(view.get("kind"), 20)
    if view.get("card_type"):
        kind += f" ({clean_line(view.get('card_type'), 40)})"
    rows: list[tuple[str, object]] = [
        ("id", view.get("asset")),
        ("kind", kind),
        ("revision", str(view.get("revision", "")).removeprefix("sha256:")[:12]),
        ("updated", view.get("updated_at")),
        ("author", fingerprint(view.get("author"))),
    ]
    if view.get("tags"):
        rows.append(("tags", view.get("tags")))
    if view.get("source"):
        rows.append(("source", view.get("source")))
    if view.get("private"):
        rows.append(("private", True))
    heads = view.get("heads")
    if isinstance(heads, list) and len(heads) > 1:
        rows.append(("conflict", f"{len(heads)} versions; `memories resolve` merges them"))
    if view.get("deleted"):
        rows.append(("deleted", "yes; `memories history` shows its past"))
    metadata = view.get("metadata")
    if isinstance(metadata, Mapping):
        rows += [(f"  {clean_line(key, 40)}", value) for key, value in metadata.items()]
    links = view.get("links")
    if isinstance(links, list):
        for link in links:
            if isinstance(link, Mapping):
                target = str(link.get("target", ""))[:12]
                rows.append(("link", f"{clean_line(link.get('relation'), 40)} → {target}"))
    file = view.get("file")
    if isinstance(file, Mapping):
        rows.append(
            (
                "file",
                f"{clean_line(file.get('name'), 100)} ({clean_line(file.get('media_type'), 80)}, "
                f"{file.get('size')} bytes); save it with `memories file get`",
            )
        )
    if view.get("secret_hidden"):
        rows.append(("secret", "hidden (never shown)"))
    console.print(key_values(rows))
    body = view.get("body")
    if isinstance(body, str) and body:
        console.print(Rule(style="dim"))
        console.print(Text(clean_text(body)))


# -- edit -----------------------------------------------------------------------------------


@cli.command()
@click.argument("ref")
@click.argument("text", required=False)
@click.option("--title", help="A new title.")
@tag_option
@meta_option
@click.option(
    "--private/--public", "private", default=None, help="Make it private or public again."
)
@source_option
@click.option(
    "--base",
    metavar="REVISION",
    help="The revision your edit starts from (refuses if it is stale).",
)
@click.option("--fork", is_flag=True, help="With --base: keep both versions as a conflict.")
@json_option
@reports_errors
def edit(
    ref: str,
    text: str | None,
    title: str | None,
    tags: tuple[str, ...],
    meta: tuple[str, ...],
    private: bool | None,
    source: str | None,
    base: str | None,
    fork: bool,
    as_json: bool,
) -> None:
    """Change a memory: a new revision; the old ones stay in its history.

    TEXT replaces the body (- reads standard input). Without TEXT and without other options,
    $EDITOR opens on the current body. --tag replaces all tags; --meta changes single card
    fields and keeps the others.

    \b
    Examples:
      memories edit 1a2b3c4d                       # opens $EDITOR
      memories edit 1a2b3c4d "New body" --tag ops --tag db
      memories edit 1a2b3c4d --meta confidence=0.8
      memories edit 1a2b3c4d "Mine" --base 9f8e7d6c --fork
    """
    from memories.service.requests import ReadRequest, UpdateRequest

    if fork and base is None:
        raise UsageError("--fork needs --base (the revision your edit started from)")
    flags_given = any(v is not None for v in (title, private, source)) or bool(tags or meta)
    body: str | None = None
    current: dict[str, Any] | None = None
    if text is not None:
        body = body_from(text)
    elif not flags_given:
        current = call(ReadRequest(op="read", ref=ref))
        if current.get("kind") not in ("memory", "card"):
            raise UsageError(
                "only memories and cards open in the editor; give TEXT or options to change"
            )
        start = str(current.get("body") or "")
        # Never standard input here: an empty pipe must not wipe the body.
        body = body_from(None, initial=start, piped_ok=False)
        if body is None or body == start:
            _nothing_changed(as_json, current)
            return
        base = base or str(current.get("revision"))
    metadata: dict[str, Any] | None = None
    if meta:
        current = current or call(ReadRequest(op="read", ref=ref))
        card_type = current.get("card_type")
        if current.get("kind") != "card" or not isinstance(card_type, str):
            raise UsageError("--meta applies to cards; this asset is not a card")
        changes = card_metadata(card_type, meta, str(current.get("vault")))
        old = current.get("metadata")
        merged = dict(old) if isinstance(old, Mapping) else {}
        merged.update(changes)
        metadata = {key: value for key, value in merged.items() if value is not None}
    response = call(
        UpdateRequest(
            op="update",
            ref=ref,
            base=base,
            fork=fork,
            title=title,
            body=body,
            tags=_tags(tags),
            source=source,
            metadata=metadata,
            private=private,
        )
    )
    if as_json:
        emit_json(response)
        return
    _saved(response)


def _nothing_changed(as_json: bool, current: Mapping[str, Any]) -> None:
    if as_json:
        emit_json({"asset": current.get("asset"), "changed": False})
    else:
        error_console.print("nothing changed; no revision written")


def _saved(response: Mapping[str, Any]) -> None:
    asset = short_ref(dict(response))
    revision = short_ref(dict(response), "revision")
    console.print(f"saved revision {revision} of {asset}")
    heads = response.get("heads")
    if isinstance(heads, list) and len(heads) > 1:
        console.print(
            f"{asset} now has {len(heads)} conflicting versions; "
            f"`memories resolve {asset}` merges them"
        )


# -- ls -------------------------------------------------------------------------------------


@cli.command("ls")
@vault_option
@click.option(
    "--kind", type=click.Choice(["memory", "card", "file", "credential"]), help="Only this kind."
)
@click.option("--card-type", help="Only cards of this type.")
@click.option("--tag", help="Only assets with this tag.")
@click.option("--all-vaults", is_flag=True, help="List every vault, not just one.")
@json_option
@reports_errors
def list_assets(
    vault: str | None,
    kind: str | None,
    card_type: str | None,
    tag: str | None,
    all_vaults: bool,
    as_json: bool,
) -> None:
    """List what a vault holds: id, kind, title, tags. Never shows bodies or secrets.

    Private memories are listed only after `memories sudo`.

    \b
    Examples:
      memories ls
      memories ls --kind card --card-type knowledge
      memories ls --tag ops --all-vaults --json
    """
    if all_vaults and vault is not None:
        raise UsageError("give either --vault or --all-vaults")
    from memories.service.requests import ListRequest
    from memories.views.kinds import parse_kind

    response = call(
        ListRequest(
            op="list",
            vault=vault,
            kind=None if kind is None else parse_kind(kind),
            card_type=card_type,
            tag=tag,
            all_vaults=all_vaults,
        )
    )
    if as_json:
        emit_json(response)
        return
    summaries = [s for s in response.get("summaries", []) if isinstance(s, Mapping)]
    if not summaries:
        console.print("nothing here yet; `memories put` saves a memory")
        return
    console.print(summaries_table(summaries, show_vault=all_vaults))


# -- history and diff -----------------------------------------------------------------------


@cli.command()
@click.argument("ref")
@json_option
@reports_errors
def history(ref: str, as_json: bool) -> None:
    """List every revision of a memory, newest first, with author and title.

    \b
    Example:
      memories history 1a2b3c4d
    """
    from memories.service.requests import HistoryRequest

    response = call(HistoryRequest(op="history", ref=ref))
    if as_json:
        emit_json(response)
        return
    entries = [e for e in response.get("entries", []) if isinstance(e, Mapping)]
    console.print(history_table(entries))


@cli.command()
@click.argument("ref")
@click.argument("old", required=False)
@click.argument("new", required=False)
@json_option
@reports_errors
def diff(ref: str, old: str | None, new: str | None, as_json: bool) -> None:
    """Show what changed between two revisions as a unified diff.

    NEW defaults to the live version and OLD to NEW's parent. File payloads and credential
    secrets never appear.

    \b
    Examples:
      memories diff 1a2b3c4d                   # the last change
      memories diff 1a2b3c4d 9f8e7d6c          # from 9f8e7d6c to now
      memories diff 1a2b3c4d 9f8e7d6c 5a4b3c2d
    """
    from memories.service.requests import DiffRequest

    response = call(DiffRequest(op="diff", ref=ref, old=old, new=new))
    if as_json:
        emit_json(response)
        return
    text = str(response.get("diff") or "")
    if not text.strip():
        console.print("no differences")
        return
    console.print(diff_text(text), end="")


# -- rm, conflicts, resolve -----------------------------------------------------------------


@cli.command("rm")
@click.argument("ref")
@click.option("--base", metavar="REVISION", help="Refuse unless this revision is the newest.")
@json_option
@reports_errors
def remove(ref: str, base: str | None, as_json: bool) -> None:
    """Delete a memory from current views. Its history stays (`memories history`).

    \b
    Example:
      memories rm 1a2b3c4d
    """
    from memories.service.requests import TombstoneRequest

    response = call(TombstoneRequest(op="tombstone", ref=ref, base=base))
    if as_json:
        emit_json(response)
        return
    console.print(f"deleted {short_ref(response)}; `memories history` still shows its past")


@cli.command()
@vault_option
@json_option
@reports_errors
def conflicts(vault: str | None, as_json: bool) -> None:
    """List memories with conflicting versions (edits that did not see each other).

    \b
    Example:
      memories conflicts
    """
    from memories.service.requests import ConflictsRequest

    response = call(ConflictsRequest(op="conflicts", vault=vault))
    if as_json:
        emit_json(response)
        return
    summaries = [s for s in response.get("summaries", []) if isinstance(s, Mapping)]
    if not summaries:
        console.print("no conflicts")
        return
    console.print(summaries_table(summaries))
    console.print("`memories history REF` shows the versions; `memories resolve REF` merges them")


@cli.command()
@click.argument("ref")
@click.argument("text", required=False)
@click.option(
    "--parent",
    "parents",
    multiple=True,
    metavar="REVISION",
    help="A current version the resolution replaces (repeatable; name all of them) "
    "[default: all current versions].",
)
@click.option("--delete", is_flag=True, help="Resolve by deleting the memory.")
@click.option("--title", help="The title of the resolved version.")
@tag_option
@click.option("--private/--public", "private", default=None, help="Privacy of the result.")
@json_option
@reports_errors
def resolve(
    ref: str,
    text: str | None,
    parents: tuple[str, ...],
    delete: bool,
    title: str | None,
    tags: tuple[str, ...],
    private: bool | None,
    as_json: bool,
) -> None:
    """Merge the conflicting versions of a memory into one new version.

    TEXT is the merged body (- reads standard input); without it the newest version's
    content is kept. --delete resolves by deleting the memory instead.

    \b
    Examples:
      memories conflicts
      memories history 1a2b3c4d
      memories resolve 1a2b3c4d "The merged text"
      memories resolve 1a2b3c4d --delete
    """
    if delete and (text is not None or title is not None or tags or private is not None):
        raise UsageError("--delete takes no new content")
    from memories.service.requests import ResolveRequest

    body = body_from(text, editor_ok=False) if text is not None else None
    response = call(
        ResolveRequest(
            op="resolve",
            ref=ref,
            parents=list(parents) if parents else None,
            delete=delete,
            title=title,
            body=body,
            tags=_tags(tags),
            private=private,
        )
    )
    if as_json:
        emit_json(response)
        return
    if delete:
        console.print(f"resolved {short_ref(response)} by deleting it")
    else:
        _saved(response)
