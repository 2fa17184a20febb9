"""context: a short block about the current workspace for an agent's session start.

Built to run as a Claude Code ``SessionStart`` hook: it never starts the daemon, never waits
long, and never fails the session. Whatever it cannot reach (no daemon, a locked vault, no
urchin journal) is left out with one short note on stderr, and it exits 0.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors, state, vault_option
from memories.cli.render import emit_json
from memories.errors import LockedError, MemoriesError, UnavailableError, UsageError

if TYPE_CHECKING:
    from memories.context import Workspace, WorkspaceActivity
    from memories.service.requests import RequestModel

__all__: list[str] = []

#: The whole command's time budget (a SessionStart hook is given 10 seconds).
_BUDGET_SECONDS = 6.0
_MEMORIES_SHOWN = 12
_ACTIVITY_SHOWN = 20
_PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"


def _note(message: str) -> None:
    click.echo(f"memories context: {message}", err=True)


@dataclass
class _Run:
    deadline: float
    notes: list[str] = field(default_factory=list)

    def left(self) -> float:
        return max(0.2, self.deadline - time.monotonic())


def _words(text: str) -> str | None:
    """``text`` as plain search words (no phrase, exclusion or tag syntax), or None when it
    holds no word. Words, not a phrase: a phrase matches body text only, while words also
    match tags and sources (``--source ~/dev/shop/README.md`` holds the word ``shop``)."""
    words = "".join(ch if ch.isalnum() else " " for ch in text).split()
    return " ".join(words) or None


def _ask(run: _Run, request: RequestModel) -> dict[str, Any] | None:
    """The daemon's answer; None when it refuses the request itself (a folder's name it will
    not take as a tag or query: simply no hits).

    Raises:
        _Stop: the daemon cannot answer this run (the reason is noted).
    """
    try:
        return call(request, timeout=run.left())
    except UsageError:
        return None
    except LockedError:
        run.notes.append("the vault is locked, memories left out (run `memories unlock`)")
    except UnavailableError:
        run.notes.append("no memories daemon answered, memories left out")
    except MemoriesError as exc:
        run.notes.append(f"memories left out ({exc.code})")
    raise _Stop


def _request(model: type[RequestModel], **fields: Any) -> RequestModel | None:
    """The request, or None when a folder's name cannot be one (too long for a tag, say):
    such a workspace simply has no tagged or named memories."""
    try:
        return model(**fields)
    except ValueError:  # pydantic's ValidationError
        return None


class _Stop(Exception):
    """The daemon cannot answer this run: ask it nothing more."""


def _memories(run: _Run, workspace: Workspace, vault: str | None) -> tuple[list[Any], int]:
    from memories.context import select_memories
    from memories.service.requests import ListRequest, SearchQueryRequest

    # Never start a daemon from a hook: a fresh one is locked and would ask for a password.
    state().autostart = False
    try:
        state().settings()
    except UsageError as exc:
        run.notes.append(f"memories left out: {exc.message}")
        return [], 0
    tagged: list[dict[str, Any]] = []
    searches: list[list[dict[str, Any]]] = []
    try:
        for tag in dict.fromkeys([workspace.name, workspace.name.lower()]):
            listing = _request(ListRequest, op="list", vault=vault, tag=tag)
            answer = None if listing is None else _ask(run, listing)
            if answer is not None:
                tagged += [s for s in answer.get("summaries", []) if isinstance(s, dict)]
        query = _words(workspace.name)
        request = (
            None
            if query is None
            else _request(SearchQueryRequest, op="search", query=query, vault=vault, limit=10)
        )
        if request is not None:
            answer = _ask(run, request)
            if answer is not None:
                searches.append([h for h in answer.get("results", []) if isinstance(h, dict)])
    except _Stop:
        pass  # noted; what was gathered so far still counts
    return select_memories(tagged, searches, limit=_MEMORIES_SHOWN)


class _Activity(threading.Thread):
    """urchin's side, read in parallel with the daemon's and abandoned if it runs late (the
    first read of a large journal builds urchin's index)."""

    def __init__(self, roots: list[Path]) -> None:
        super().__init__(name="memories-context-activity", daemon=True)
        self.roots = roots
        self.result: WorkspaceActivity | None = None
        self.note: str | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        from memories.context import ActivityUnavailableError, last_day_activity

        try:
            self.result = last_day_activity(self.roots, limit=_ACTIVITY_SHOWN)
        except ActivityUnavailableError as exc:
            self.note = f"{exc.message}, activity left out"
        except Exception as exc:  # handed to the main thread, which raises it again
            self.error = exc


def _start_folder(workspace: Path | None) -> Path:
    if workspace is not None:
        return workspace
    project = os.environ.get(_PROJECT_DIR_ENV, "")
    if project and os.path.isabs(project) and os.path.isdir(project):
        return Path(project)
    return Path.cwd()


def _spellings(folder: Path, root: Path) -> list[Path]:
    """The workspace root as resolved and as spelled through ``folder`` (urchin records the
    working directory as the shell saw it, links and all)."""
    given = Path(os.path.abspath(folder))
    depth = len(folder.resolve().parts) - len(root.parts)
    spelled = given.parents[depth - 1] if 0 < depth <= len(given.parents) else given
    return sorted({root, spelled})


# The option limits repeat memories.context's MIN_MAX_CHARS and DEFAULT_MAX_CHARS (a test
# checks they agree): importing it here would load urchin for every memories command.
@cli.command("context")
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The project folder [default: $CLAUDE_PROJECT_DIR when set, else the current folder].",
)
@click.option(
    "--max-chars",
    type=click.IntRange(400, 100_000),
    default=4000,
    show_default=True,
    help="Never print more than this many characters.",
)
@vault_option
@json_option
@reports_errors
def context_cmd(workspace: Path | None, max_chars: int, vault: str | None, as_json: bool) -> None:
    """Print what memories and urchin know about this workspace, for an agent to read.

    Memories tagged with the workspace's name (the repository folder's name) or found by a
    search for it (titles, bodies, tags and sources); and, when urchin's journal
    exists, the workspace's activity on its last active day. Private memories and credentials
    never appear; text that looks like a secret is redacted. The block is marked as untrusted
    data for the agent, is at most --max-chars long, and is the same for the same vault and
    journal. Nothing at all is printed when there is nothing to say.

    It never starts the daemon and always exits 0 once its options are valid: a locked vault,
    no daemon or no journal only leaves that part out, with a short note on stderr. Turn it
    off for a project with an empty .memories-no-context file in its folder (or any folder
    above), or everywhere with MEMORIES_NO_CONTEXT=1.

    \b
    Examples:
      memories context
      memories context --workspace ~/dev/shop --max-chars 2000
      memories context --json
    """
    from memories.context import (
        OPT_OUT_FILE,
        Block,
        clean,
        opted_out,
        render,
        resolve_workspace,
    )

    run = _Run(deadline=time.monotonic() + _BUDGET_SECONDS)
    folder = _start_folder(workspace)
    if opted_out(folder):
        _note(f"turned off here ({OPT_OUT_FILE} or MEMORIES_NO_CONTEXT)")
        if as_json:
            emit_json({"opted_out": True, "block": ""})
        return
    try:
        where = resolve_workspace(folder)
    except OSError:
        _note("the workspace folder cannot be read; nothing to show")
        if as_json:
            emit_json({"opted_out": False, "block": ""})
        return
    activity = _Activity(_spellings(folder, where.root))
    activity.start()
    memories, memories_total = _memories(run, where, vault)
    activity.join(timeout=run.left())
    if activity.error is not None:
        raise activity.error
    if activity.is_alive():
        run.notes.append("urchin's journal took too long to read, activity left out")
    elif activity.note:
        run.notes.append(activity.note)
    block: Block = render(
        where.name,
        memories,
        memories_total,
        None if activity.is_alive() else activity.result,
        max_chars=max_chars,
    )
    for message in run.notes:
        _note(message)
    if as_json:
        emit_json(
            {
                "opted_out": False,
                "workspace": {"name": where.name, "root": str(where.root)},
                "block": block.text,
                "memories": [
                    {
                        "short_id": item.short_id,
                        "kind": item.kind,
                        "card_type": item.card_type,
                        "title": clean(item.title, 100),
                        "tags": [clean(tag, 32) for tag in item.tags],
                    }
                    for item in block.memories
                ],
                "memories_total": block.memories_total,
                "activity": [
                    {
                        "timestamp": item.timestamp.isoformat().replace("+00:00", "Z"),
                        "source": item.source,
                        "kind": item.kind,
                    }
                    for item in block.activity
                ],
                "activity_total": block.activity_total,
                "notes": run.notes,
            }
        )
        return
    if block.text:
        click.echo(block.text, nl=False)
