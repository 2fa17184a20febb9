"""rebuild-index: index the whole journal again, from scratch."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from urchin.cli import cli
from urchin.cli.common import json_option, load, reports_errors
from urchin.cli.render import console, emit_json, error_console
from urchin.journal import Journal
from urchin.query import index

# Below this size a rebuild takes about a second: no progress bar.
_BAR_FROM_BYTES = 16 * 1024 * 1024


@contextmanager
def _progress_bar(total: int) -> Iterator[index.Progress | None]:
    """A progress callback drawing a bar on stderr, or None when nobody would see it."""
    if total < _BAR_FROM_BYTES or not error_console.is_terminal:
        yield None
        return
    columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(
        "[progress.description]{task.description}", *columns, console=error_console, transient=True
    ) as bar:
        task = bar.add_task("indexing", total=total)

        def advance(done: int, target: int) -> None:
            bar.update(task, completed=done, total=max(target, 1))

        yield advance


@cli.command("rebuild-index")
@json_option
@reports_errors
def rebuild_index(as_json: bool) -> None:
    """Index the whole journal again (index.db beside the journal).

    The index is a cache that every reader keeps up to date on its own; rebuild
    it after copying journals around, or to measure how long indexing takes.
    """
    journal = Journal(load().journal_path)
    started = time.perf_counter()
    if not journal.path.is_file():
        result: dict[str, object] = {
            "journal_path": str(journal.path),
            "index_path": None,
            "events": 0,
            "malformed": 0,
            "oversized": 0,
            "indexed_bytes": 0,
            "torn_tail": False,
        }
    else:
        with _progress_bar(journal.size()) as progress:
            status = index.rebuild(journal, progress)
        result = {"journal_path": str(journal.path), **status.to_json()}
    seconds = time.perf_counter() - started
    result["seconds"] = round(seconds, 3)
    if as_json:
        emit_json(result)
        return
    if result["index_path"] is None:
        console.print(f"no journal at {journal.path} yet: nothing to index")
        return
    console.print(
        f"indexed {result['events']} events in {seconds:.2f} s"
        f" ({result['malformed']} malformed line(s) skipped) → {result['index_path']}"
    )
    if result["oversized"]:
        error_console.print(f"skipped {result['oversized']} line(s) over the size limit")
    if result["torn_tail"]:
        error_console.print("the last line is unfinished; it is indexed once it is complete")
