"""import: many memories at once, from a JSONL file or a folder of Markdown notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from memories.cli import cli
from memories.cli.common import call, json_option, reports_errors, vault_option
from memories.cli.import_files import Problem, Read, read_jsonl, read_markdown
from memories.cli.render import clean_line, console, emit_json, error_console
from memories.errors import UsageError

__all__: list[str] = []

#: Items per commit, and a bound on the text one batch carries (well under a frame).
_BATCH_ITEMS = 500
_BATCH_CHARS = 4 * 1024 * 1024
#: Problems listed in the summary (the count is always complete).
_SHOWN_PROBLEMS = 200


def _batches(reads: list[Read]) -> list[list[Read]]:
    batches: list[list[Read]] = []
    current: list[Read] = []
    size = 0
    for read in reads:
        length = len(read.item.body) + len(read.item.title) + 256
        if current and (len(current) >= _BATCH_ITEMS or size + length > _BATCH_CHARS):
            batches.append(current)
            current, size = [], 0
        current.append(read)
        size += length
    if current:
        batches.append(current)
    return batches


def _send(
    batches: list[list[Read]], vault: str | None, dry_run: bool, progress: Progress | None
) -> tuple[int, int, list[Problem], str | None]:
    from memories.service.requests import ImportBatchRequest

    imported = valid = 0
    problems: list[Problem] = []
    vault_id = None
    task = None
    if progress is not None:
        task = progress.add_task("importing", total=sum(len(b) for b in batches))
    for batch in batches:
        response = call(
            ImportBatchRequest(
                op="import_batch",
                vault=vault,
                items=[read.item for read in batch],
                dry_run=dry_run,
            ),
            timeout=300,
        )
        imported += int(response["imported"])
        valid += int(response["valid"])
        vault_id = response.get("vault")
        for error in response["errors"]:
            problems.append(Problem(batch[int(error["item"])].where, str(error["error"])))
        if progress is not None and task is not None:
            progress.advance(task, len(batch))
    return imported, valid, problems, vault_id


@cli.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@vault_option
@click.option("--dry-run", is_flag=True, help="Check everything, write nothing.")
@json_option
@reports_errors
def import_cmd(path: Path, vault: str | None, dry_run: bool, as_json: bool) -> None:
    """Import memories from PATH: a JSONL file or a folder of Markdown notes.

    \b
    JSONL: one object per line with "title" and "body", and optionally "tags",
    "source", "card_type" and "metadata" (a card type makes the line a card).
    Markdown: every .md file under the folder (hidden folders are skipped); the title
    comes from the front matter's title or the file name, tags from its tags, and
    [[wikilinks]] stay in the body. The note's path becomes its source.

    Memories are written in batches of up to 500, each in one commit. Lines or files that
    cannot be imported are listed by position with the reason (never their content); the
    rest are imported. Exit status 1 when anything was left out.

    \b
    Examples:
      memories import notes.jsonl --vault work
      memories import ~/Obsidian/Vault --dry-run
    """
    try:
        entries = list(read_markdown(path) if path.is_dir() else read_jsonl(path))
    except OSError as exc:
        raise UsageError(f"cannot read {path.name}: {exc.strerror or 'unreadable'}") from exc
    reads = [e for e in entries if isinstance(e, Read)]
    problems = [e for e in entries if isinstance(e, Problem)]
    batches = _batches(reads)
    if as_json or not batches:
        imported, valid, refused, vault_id = _send(batches, vault, dry_run, None)
    else:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=error_console,
            transient=True,
        ) as progress:
            imported, valid, refused, vault_id = _send(batches, vault, dry_run, progress)
    problems.extend(refused)
    summary: dict[str, Any] = {
        "imported": imported,
        "valid": valid,
        "failed": len(problems),
        "problems": [p.to_dict() for p in problems[:_SHOWN_PROBLEMS]],
        "dry_run": dry_run,
        "vault": vault_id,
    }
    if as_json:
        emit_json(summary)
    else:
        verb = "would import" if dry_run else "imported"
        console.print(f"{verb} {valid if dry_run else imported} memories, {len(problems)} left out")
        for problem in problems[:_SHOWN_PROBLEMS]:
            console.print(
                f"  {clean_line(problem.where, 120)}: {clean_line(problem.error, 200)}",
                highlight=False,
            )
        if len(problems) > _SHOWN_PROBLEMS:
            console.print(f"  ... and {len(problems) - _SHOWN_PROBLEMS} more")
    if problems:
        raise SystemExit(1)
