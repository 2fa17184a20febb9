from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from urchin.collectors.base import (
    CheckpointStore,
    Collector,
    CollectorRun,
    run_all,
    run_collector,
    stable_id,
)
from urchin.ephemeral import Ephemeral
from urchin.event import Event
from urchin.identity import Identity
from urchin.journal import Journal
from urchin.recorder import Recorder


class ListCollector(Collector):
    """Emits one event per item of a list; optionally fails before saving its checkpoint."""

    name = "toy"

    def __init__(self, items: list[str], fail_before_save: bool = False) -> None:
        self.items = items
        self.fail_before_save = fail_before_save

    def available(self) -> bool:
        return True

    def collect(self, run: CollectorRun) -> None:
        done = int(run.state.get("done", 0))
        run.emit(
            Event.create(item, "toy", event_id=stable_id("toy", item)) for item in self.items[done:]
        )
        if self.fail_before_save:
            raise RuntimeError("crashed before the checkpoint")
        run.save({"done": len(self.items)})


@pytest.fixture
def parts(tmp_path: Path) -> tuple[Recorder, CheckpointStore, Journal]:
    journal = Journal(tmp_path / "events.jsonl")
    return Recorder(journal, Ephemeral(tmp_path)), CheckpointStore(tmp_path), journal


def _contents(journal: Journal) -> list[str]:
    return [entry.event.content for entry in journal.scan()]


def test_crash_on_the_first_run_neither_loses_nor_duplicates(
    parts: tuple[Recorder, CheckpointStore, Journal],
) -> None:
    recorder, store, journal = parts
    identity = Identity.resolve()
    crashed = run_collector(ListCollector(["a", "b"], True), recorder, identity, store)
    assert crashed.errors
    assert "RuntimeError" in crashed.errors[0]
    assert not store.path("toy").exists()
    result = run_collector(ListCollector(["a", "b", "c"]), recorder, identity, store)
    assert result.new == 1
    assert result.skipped == 2
    assert _contents(journal) == ["a", "b", "c"]


def test_deleted_checkpoint_does_not_duplicate(
    parts: tuple[Recorder, CheckpointStore, Journal],
) -> None:
    recorder, store, journal = parts
    identity = Identity.resolve()
    run_collector(ListCollector(["a", "b"]), recorder, identity, store)
    store.path("toy").unlink()
    again = run_collector(ListCollector(["a", "b"]), recorder, identity, store)
    assert again.new == 0
    assert _contents(journal) == ["a", "b"]


def test_events_get_an_actor_and_ephemeral_mode_drops_them(
    parts: tuple[Recorder, CheckpointStore, Journal], tmp_path: Path
) -> None:
    recorder, store, journal = parts
    Ephemeral(tmp_path).start()
    dropped = run_collector(ListCollector(["secret"]), recorder, Identity("ada", "box"), store)
    assert dropped.dropped == 1
    assert journal.size() == 0
    Ephemeral(tmp_path).end()
    run_collector(ListCollector(["secret", "open"]), recorder, Identity("ada", "box"), store)
    events = [entry.event for entry in journal.scan()]
    assert [e.content for e in events] == ["open"]  # dropped events are gone for good
    assert events[0].actor is not None
    assert events[0].actor.account == "ada"


def test_run_all_stops_between_collectors_and_reports_each(
    parts: tuple[Recorder, CheckpointStore, Journal],
) -> None:
    import threading

    recorder, store, _ = parts
    stop = threading.Event()
    seen: list[str] = []

    def on_result(result: object) -> None:
        seen.append("x")
        stop.set()

    results = run_all(
        [ListCollector(["a"]), ListCollector(["b"])],
        recorder,
        Identity.resolve(),
        store,
        stop=stop,
        on_result=on_result,
    )
    assert len(results) == 1
    assert seen == ["x"]


def test_corrupt_checkpoint_is_reported_not_reset(
    parts: tuple[Recorder, CheckpointStore, Journal],
) -> None:
    recorder, store, journal = parts
    store.folder.mkdir(parents=True)
    store.path("toy").write_text("[1, 2", encoding="utf-8")
    result = run_collector(ListCollector(["a"]), recorder, Identity.resolve(), store)
    assert result.errors
    assert "corrupt" in result.errors[0]
    assert journal.size() == 0


def test_ignored_workspaces_are_counted_not_written(
    parts: tuple[Recorder, CheckpointStore, Journal], tmp_path: Path
) -> None:
    _, store, journal = parts
    secret = tmp_path / "client"
    secret.mkdir()
    (secret / ".urchinignore").write_text("", encoding="utf-8")

    class WorkspaceCollector(ListCollector):
        def collect(self, run: CollectorRun) -> None:
            run.emit(
                Event.create(item, "toy", event_id=stable_id("toy", item), workspace=str(secret))
                if item.startswith("hidden")
                else Event.create(item, "toy", event_id=stable_id("toy", item))
                for item in self.items
            )
            run.save({})

    recorder = Recorder(journal, Ephemeral(tmp_path))
    result = run_collector(
        WorkspaceCollector(["hidden-1", "open"]), recorder, Identity.resolve(), store
    )
    assert result.new == 1
    assert result.ignored == 1
    assert _contents(journal) == ["open"]


def test_a_crashing_collector_reports_its_error_type_without_the_message(
    parts: tuple[Recorder, CheckpointStore, Journal], caplog: pytest.LogCaptureFixture
) -> None:
    recorder, store, _ = parts

    class Leaky(ListCollector):
        def collect(self, run: CollectorRun) -> None:
            raise ValueError("password=hunter2 from the source file")

    result = run_collector(Leaky([]), recorder, Identity.resolve(), store)
    assert result.errors == ["internal error (ValueError) in this collector; please report it"]
    assert "hunter2" not in caplog.text


@pytest.mark.parametrize(
    "parts", [("toy", "1"), ("claude", "tool/toolu_1"), ("codex", "t", "line", "é\x1f"), ("x",)]
)
def test_stable_id_is_the_uuid5_of_the_joined_parts(parts: tuple[str, ...]) -> None:
    namespace = uuid.UUID("6b1f2c3e-8a51-4d0e-9c57-2f0f5a7d9e11")
    expected = uuid.uuid5(namespace, "\x1f".join(parts))
    made = stable_id(*parts)
    assert made == expected and made.version == 5 and str(made) == str(expected)


@pytest.mark.parametrize("parts", [("toy", "1"), ("codex", "t", "call", "c1")])
def test_stable_id_is_a_complete_uuid(parts: tuple[str, ...]) -> None:
    import copy
    import pickle

    made = stable_id(*parts)
    plain = uuid.UUID(int=made.int)
    assert {name: getattr(made, name) for name in ("int", "is_safe", "hex", "urn", "fields")} == {
        name: getattr(plain, name) for name in ("int", "is_safe", "hex", "urn", "fields")
    }
    assert hash(made) == hash(plain) and made == plain and repr(made) == repr(plain)
    assert pickle.loads(pickle.dumps(made)) == plain  # noqa: S301 - our own bytes
    assert copy.copy(made) == plain
    assert {made: 1}[plain] == 1
    with pytest.raises(TypeError):
        made.int = 0  # type: ignore[misc]
