"""The one write path every front end uses: CLI, intake, MCP and collectors.

It applies the rules every event must pass before it reaches the journal, in
one place: ephemeral mode drops everything; activity in an ignored workspace
(``.urchinignore``) is dropped; what is left has its secrets redacted; then it
is appended. No writer appends to the journal any other way.

Redaction covers every string field of the event: content, source, a free-word
kind, brain, workspace, session, title, tags, every actor field (account, device,
workspace, node id) and every string inside meta. A secret is replaced in place by
its ``[REDACTED:<kind>]`` marker. The fields whose values are structural are typed
values rather than text (the id is a UUID, the timestamp a datetime, a built-in
kind an enum member), so redaction never reaches them and they keep their format.
Every text field's own rule is that it is a string, and for source, content and a
free-word kind that it is not blank; a marker is never blank, so it always fits.
Should redaction nevertheless leave a field that breaks its rule (a blank source,
say, from a configured pattern), the event is rejected with
:class:`~urchin.errors.RedactionError`, naming the field and never its value, and
nothing of its batch is written: a secret is never written to keep an event, and an
event is never quietly altered into something else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from urchin.ephemeral import Ephemeral
from urchin.errors import RedactionError
from urchin.event import Event, OtherKind
from urchin.ignore import IgnorePolicy
from urchin.journal import Journal
from urchin.redact import Redactor, default_redactor

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = ["BatchResult", "Outcome", "Recorder"]

log = logging.getLogger(__name__)


class Outcome(StrEnum):
    OK = "ok"
    DROPPED = "dropped"  # ephemeral mode: nothing written
    IGNORED = "ignored"  # every event came from an ignored workspace: nothing written


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What :meth:`Recorder.record_batch` did: how many events were written and ignored."""

    outcome: Outcome
    written: int
    ignored: int


@dataclass(frozen=True, slots=True)
class Recorder:
    """Ephemeral check, ignore check, redaction, append. Build with :meth:`from_settings`;
    ``Recorder(journal, ephemeral)`` uses the built-in redaction rules and the ignore files
    of the current environment."""

    journal: Journal
    ephemeral: Ephemeral
    redactor: Redactor = field(default_factory=default_redactor)
    ignore: IgnorePolicy = field(default_factory=IgnorePolicy.from_env)

    @classmethod
    def from_settings(cls, settings: Settings, *, durable: bool = True) -> Recorder:
        """The recorder ``settings`` describe (journal path, redaction keys, ignore files).

        Raises:
            ConfigError: a configured redaction pattern is invalid.
        """
        return cls(
            Journal(settings.journal_path, durable=durable),
            Ephemeral(settings.data_dir),
            Redactor.from_settings(settings),
            IgnorePolicy.from_settings(settings),
        )

    def prepare(self, event: Event) -> Event:
        """The event exactly as it will be written: secrets redacted in every string field.

        Raises:
            RedactionError: a field would break its format once redacted (see the module).
        """
        redacted = self.redactor.redact_event(event)
        if redacted is not event:
            _check_redacted(redacted)
        return redacted

    def is_ignored(self, event: Event) -> bool:
        """Whether the event comes from an ignored workspace (``.urchinignore``)."""
        if self.ignore.ignores(event.workspace):
            return True
        actor = event.actor
        return (
            actor is not None
            and actor.workspace != event.workspace
            and self.ignore.ignores(actor.workspace)
        )

    def record(self, event: Event) -> Outcome:
        """Append one event unless ephemeral mode is on or its workspace is ignored.

        Raises:
            RedactionError: a field would break its format once redacted; nothing written.
            JournalWriteError: the journal could not be written.
        """
        return self.record_batch([event]).outcome

    def record_many(self, events: Sequence[Event]) -> Outcome:
        """Append events with one write, or drop them all in ephemeral mode.

        Events from ignored workspaces are left out; :attr:`Outcome.IGNORED` means every
        event was. Use :meth:`record_batch` for the counts.

        Raises:
            RedactionError: an event would break its format once redacted; nothing written.
            JournalWriteError: the journal could not be written.
        """
        return self.record_batch(events).outcome

    def record_batch(self, events: Iterable[Event]) -> BatchResult:
        """Like :meth:`record_many`, reporting how many events were written and ignored.

        Raises:
            RedactionError: an event would break its format once redacted; nothing written.
            JournalWriteError: the journal could not be written.
        """
        batch = list(events)
        if self.ephemeral.is_active():
            return BatchResult(Outcome.DROPPED, 0, 0)
        result, lines = self.render(batch)
        if lines:
            self.journal.append_lines(lines)
        return result

    def render(self, events: Sequence[Event]) -> tuple[BatchResult, bytes]:
        """The journal lines for ``events`` once ignored workspaces are left out and
        secrets redacted, without the ephemeral check or the append.

        For writers that batch appends themselves (the intake's group commit); they
        must check ephemeral mode before writing.

        Raises:
            RedactionError: an event would break its format once redacted.
        """
        # Whether an event is ignored depends on its workspace and its actor's only, and a
        # batch holds few of those: each pair is asked about once, not once per event.
        verdicts: dict[tuple[str | None, str | None], bool] = {}
        lines: list[bytes] = []
        for event in events:
            actor = event.actor
            where = (event.workspace, None if actor is None else actor.workspace)
            ignored = verdicts.get(where)
            if ignored is None:
                ignored = verdicts[where] = self.is_ignored(event)
            if not ignored:
                lines.append(self.prepare(event).to_line())
        left_out = len(events) - len(lines)
        if left_out:
            log.debug("left out %d event(s) from ignored workspaces", left_out)
        if events and not lines:
            return BatchResult(Outcome.IGNORED, 0, left_out), b""
        return BatchResult(Outcome.OK, len(lines), left_out), b"".join(lines)


def _check_redacted(event: Event) -> None:
    """Raise RedactionError if redaction left a field its format does not allow.

    Redaction only ever puts strings where strings were, so types and presence hold by
    construction; what a replacement could break is a rule about the text itself.
    """
    if not event.source.strip():
        raise _broken("source", "must not be blank")
    if not event.content.strip():
        raise _broken("content", "must not be blank")
    kind = event.kind
    if isinstance(kind, OtherKind) and not kind.name.strip():
        raise _broken("kind", "must not be blank")


def _broken(name: str, rule: str) -> RedactionError:
    return RedactionError(
        f"{name} {rule} once its secrets are redacted, so the event was not written; "
        f"check the redaction patterns in config.toml"
    )
