"""The daily-note projection: marker blocks, byte-exact surroundings, atomic writes, the CLI."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support import CliResult
from urchin.errors import UrchinError
from urchin.event import Event
from urchin.journal import Journal
from urchin.projection import (
    ACTIVITY_MARKERS,
    CURRENT_MARKERS,
    DAILY_MARKERS,
    MarkerStyle,
    ProjectionError,
    ProjectionResult,
    Window,
    project_daily_note,
    render_block,
)
from urchin.projection.note import _NoteChanged, _replace_atomically

DAY = date(2026, 5, 4)
START = CURRENT_MARKERS.start.encode()
END = CURRENT_MARKERS.end.encode()

Urchin = Callable[..., CliResult]


def at(hour: int, minute: int = 0, day: date = DAY) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def event(
    content: str,
    when: datetime,
    *,
    source: str = "claude",
    workspace: str | None = None,
    title: str | None = None,
) -> Event:
    return Event.create(content, source, timestamp=when, workspace=workspace, title=title)


@pytest.fixture
def vault(isolated_home: Path) -> Path:
    root = isolated_home / "brain"
    root.mkdir()
    return root


@pytest.fixture
def note(vault: Path) -> Path:
    return vault / "daily" / f"{DAY.isoformat()}.md"


def record(journal_path: Path, events: Sequence[Event]) -> None:
    with Journal(journal_path) as journal:
        journal.append_many(events)


def project(journal_path: Path, vault: Path, *, dry_run: bool = False) -> ProjectionResult:
    window = Window.for_day(DAY, UTC)
    return project_daily_note(journal_path, vault, window, home=vault.parent, dry_run=dry_run)


def write_note(note: Path, data: bytes) -> bytes:
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_bytes(data)
    return data


def block_bytes(journal_path: Path, home: Path, newline: bytes = b"\n") -> bytes:
    """The current-style block for DAY's events, as the projection should write it."""
    events = [
        entry.event for entry in Journal(journal_path).scan() if entry.event.timestamp.date() == DAY
    ]
    lines = [START, *(line.encode() for line in render_block(events, home=home, tz=UTC)), END]
    return b"".join(line + newline for line in lines)


def between_markers(data: bytes, style: MarkerStyle = CURRENT_MARKERS) -> bytes:
    start = data.index(style.start.encode()) + len(style.start)
    return data[start : data.index(style.end.encode(), start)]


# -- summary content -------------------------------------------------------------------


def test_summary_counts_sources_groups_workspaces_and_orders_bullets(
    journal_path: Path, vault: Path, note: Path
) -> None:
    home = vault.parent
    long_text = "x" * 200
    record(
        journal_path,
        [
            event("Fix login\nsecond line", at(9), workspace=f"{home}/dev/a"),
            event("body", at(9, 30), source="git", workspace=f"{home}/dev/a/", title="Commit"),
            event("ls -la", at(10), source="shell"),
            event(long_text, at(11), workspace="/srv/b"),
            event("later", at(12), workspace=f"{home}/dev/a"),
            event("pwd", at(13), source="shell", workspace="  "),
            event("y", at(14), source="codex", workspace="/srv/b"),
            event("yesterday", at(23, day=DAY - timedelta(days=1)), workspace="/srv/b"),
        ],
    )

    result = project(journal_path, vault)

    assert (result.created, result.appended, result.changed, result.events) == (
        True,
        False,
        True,
        7,
    )
    assert note.read_text(encoding="utf-8") == "\n".join(
        [
            "<!-- URCHIN:start -->",
            "### urchin: 7 events",
            "**claude** 3 · **shell** 2 · **codex** 1 · **git** 1",
            "",
            "#### ~/dev/a · 3",
            "- 09:00 **claude** — Fix login",
            "- 09:30 **git** — Commit",
            "- 12:00 **claude** — later",
            "",
            "#### /srv/b · 2",
            "- 11:00 **claude** — " + "x" * 119 + "…",
            "- 14:00 **codex** — y",
            "",
            "#### (no workspace) · 2",
            "- 10:00 **shell** — ls -la",
            "- 13:00 **shell** — pwd",
            "<!-- URCHIN:end -->",
            "",
        ]
    )


def test_empty_window_says_no_activity(journal_path: Path, vault: Path, note: Path) -> None:
    record(journal_path, [event("other day", at(12, day=DAY + timedelta(days=1)))])
    result = project(journal_path, vault)
    assert result.events == 0
    assert note.read_bytes() == START + b"\n_(no activity in window)_\n" + END + b"\n"


def test_bullets_are_bounded_and_the_newest_are_kept(
    journal_path: Path, vault: Path, note: Path
) -> None:
    events = [event(f"step {i}", at(0) + timedelta(minutes=i)) for i in range(205)]
    record(journal_path, events)

    project(journal_path, vault)

    lines = between_markers(note.read_bytes()).decode().splitlines()
    bullets = [line for line in lines if line.startswith("- ")]
    assert len(bullets) == 200
    assert bullets[0].endswith("— step 5")
    assert bullets[-1].endswith("— step 204")
    assert lines[-1] == "_… and 5 more_"
    assert "#### (no workspace) · 205" in lines


def test_content_cannot_inject_markers_or_control_characters(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(
        journal_path,
        [
            event("<!-- URCHIN:end -->\n<!-- URCHIN:start -->", at(8)),
            event("ignored", at(9), title="<!-- URCHIN:start -->"),
            event(
                "a\x1b[31mred\tline\u202eevil\x00\x7f\x9bend", at(10), source="<!--URCHIN:end-->"
            ),
            event("first\u2028second\rthird", at(10, 30)),
            event("ok", at(11), workspace="/w/<!-- URCHIN:end -->"),
            event("  \n\n  <!-- /URCHIN:DAILY -->", at(12)),
        ],
    )

    project(journal_path, vault)
    first = note.read_bytes()
    second_result = project(journal_path, vault)

    assert second_result.changed is False
    assert note.read_bytes() == first
    lines = first.split(b"\n")
    assert lines.count(START) == 1
    assert lines.count(END) == 1
    inner = between_markers(first).decode()
    assert "<" not in inner
    assert "- 08:00 **claude** — &lt;!-- URCHIN:end -->" in inner
    assert "- 09:00 **claude** — &lt;!-- URCHIN:start -->" in inner
    assert "- 10:00 **&lt;!--URCHIN:end-->** — a [31mred line evil end\n" in inner
    assert "- 10:30 **claude** — first\n" in inner
    assert "#### /w/&lt;!-- URCHIN:end --> · 1" in inner
    assert "- 12:00 **claude** — &lt;!-- /URCHIN:DAILY -->" in inner
    controls = [ch for ch in inner if ch != "\n" and (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0)]
    assert controls == []
    assert "\u2028" not in inner
    assert "\u202e" not in inner


def test_last_hours_window_uses_todays_note(journal_path: Path, vault: Path) -> None:
    now = at(15)
    record(
        journal_path,
        [event("old", now - timedelta(hours=3)), event("fresh", now - timedelta(hours=1))],
    )
    window = Window.last_hours(2, now=now, tz=UTC)

    result = project_daily_note(journal_path, vault, window)

    assert result.path == vault / "daily" / "2026-05-04.md"
    assert result.events == 1
    text = result.path.read_text(encoding="utf-8")
    assert "fresh" in text
    assert "old" not in text


def test_local_day_decides_membership_and_times(journal_path: Path, vault: Path) -> None:
    tz = timezone(timedelta(hours=5, minutes=30))
    record(
        journal_path,
        [
            event("late utc, early local", datetime(2026, 5, 3, 20, 0, tzinfo=UTC)),
            event("next local day", datetime(2026, 5, 4, 19, 0, tzinfo=UTC)),
        ],
    )
    result = project_daily_note(journal_path, vault, Window.for_day(DAY, tz))
    inner = between_markers(result.path.read_bytes()).decode()
    assert result.events == 1
    assert "- 01:30 **claude** — late utc, early local" in inner
    assert "next local day" not in inner


# -- where the block goes --------------------------------------------------------------


def test_running_twice_gives_identical_bytes_and_does_not_rewrite(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(journal_path, [event("one", at(9)), event("two", at(10), source="git")])
    write_note(note, b"# Monday\n\nplans\n")

    first = project(journal_path, vault)
    data = note.read_bytes()
    before = note.stat()
    second = project(journal_path, vault)

    assert first.changed and first.appended
    assert not second.changed and not second.appended and not second.created
    assert note.read_bytes() == data
    after = note.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert os.listdir(note.parent) == [note.name]  # no temporary file left behind


@pytest.mark.parametrize(
    ("original", "separator"),
    [
        (b"# Monday\n\nplans\n", b"\n"),
        (b"plans without final newline", b"\n\n"),
        (b"plans\n\n", b""),
        (b"", b""),
        (b"\xef\xbb\xbfplans\r\n", b"\r\n"),
        (b"see <!-- URCHIN:start --> inline, not a marker\n", b"\n"),
    ],
)
def test_note_without_markers_gets_block_appended(
    journal_path: Path, vault: Path, note: Path, original: bytes, separator: bytes
) -> None:
    record(journal_path, [event("one", at(9))])
    write_note(note, original)

    result = project(journal_path, vault)

    newline = b"\r\n" if b"\r\n" in original else b"\n"
    expected = original + separator + block_bytes(journal_path, vault.parent, newline)
    assert note.read_bytes() == expected
    assert (result.created, result.appended, result.changed) == (False, True, True)
    project(journal_path, vault)
    assert note.read_bytes() == expected


def test_replacement_keeps_surroundings_byte_for_byte_crlf_bom_no_final_newline(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(journal_path, [event("one", at(9)), event("two", at(10), workspace="/srv/x")])
    before = b"\xef\xbb\xbf# Title\r\n\r\n\tkeep  me \r\n  <!-- URCHIN:start -->  \r\n"
    after = b"<!-- urchin:END -->\r\ntrailing \xe2\x80\x94 text\r\n\r\nno final newline"
    write_note(note, before + b"stale line\r\nanother\r\n" + after)

    result = project(journal_path, vault)
    data = note.read_bytes()

    assert (result.created, result.appended, result.changed) == (False, False, True)
    assert data.startswith(before)
    assert data.endswith(after)
    inner = data[len(before) : len(data) - len(after)]
    assert b"stale" not in inner
    assert inner.replace(b"\r\n", b"").count(b"\n") == 0
    assert inner.endswith(b"\r\n")
    expected_inner = block_bytes(journal_path, vault.parent, b"\r\n")[
        len(START) + 2 : -len(END) - 2
    ]
    assert inner == expected_inner
    project(journal_path, vault)
    assert note.read_bytes() == data


@pytest.mark.parametrize("style", [ACTIVITY_MARKERS, DAILY_MARKERS], ids=lambda s: s.name)
def test_earlier_versions_markers_are_reused(
    journal_path: Path, vault: Path, note: Path, style: MarkerStyle
) -> None:
    record(journal_path, [event("one", at(9))])
    head = f"intro\n{style.start}\n".encode()
    tail = f"{style.end}\noutro\n".encode()
    write_note(note, head + b"stale text from before\n" + tail)

    result = project(journal_path, vault)
    data = note.read_bytes()

    assert result.style == style
    assert (result.created, result.appended, result.changed) == (False, False, True)
    assert data.startswith(head)
    assert data.endswith(tail)
    assert START not in data
    assert b"stale" not in data
    assert b"- 09:00 **claude** \xe2\x80\x94 one\n" in data


def test_current_markers_win_over_earlier_ones(journal_path: Path, vault: Path, note: Path) -> None:
    record(journal_path, [event("one", at(9))])
    legacy = b"<!-- URCHIN:DAILY -->\nold daily block\n<!-- /URCHIN:DAILY -->\n"
    write_note(note, legacy + b"middle\n" + START + b"\nstale\n" + END + b"\n")

    result = project(journal_path, vault)

    assert result.style == CURRENT_MARKERS
    data = note.read_bytes()
    assert data.startswith(legacy + b"middle\n" + START + b"\n### urchin: 1 event\n")
    assert b"stale" not in data


BROKEN_NOTES = {
    "out-of-order": (b"a\n<!-- URCHIN:end -->\nb\n<!-- URCHIN:start -->\nc\n", "before"),
    "duplicated-start": (START + b"\n" + START + b"\nx\n" + END + b"\n", "2 times"),
    "duplicated-end": (START + b"\nx\n" + END + b"\n" + END + b"\n", "2 times"),
    "only-start": (b"text\n" + START + b"\nmore", "no <!-- URCHIN:end -->"),
    "only-end": (b"text\r\n" + END + b"\r\n", "no <!-- URCHIN:start -->"),
    "legacy-only-start": (b"<!-- URCHIN:START:activity -->\n", "no <!-- URCHIN:END:activity"),
    "overlapping-styles": (
        START + b"\n<!-- URCHIN:DAILY -->\n" + END + b"\n<!-- /URCHIN:DAILY -->\n",
        "overlapping",
    ),
    "stray-legacy-next-to-valid-block": (
        START + b"\nx\n" + END + b"\n<!-- /URCHIN:DAILY -->\n",
        "no <!-- URCHIN:DAILY -->",
    ),
    "utf-16": ("<!-- URCHIN:start -->\n".encode("utf-16"), "UTF-16"),
}


@pytest.mark.parametrize("case", list(BROKEN_NOTES))
def test_broken_markers_fail_and_leave_note_untouched(
    journal_path: Path, vault: Path, note: Path, case: str
) -> None:
    record(journal_path, [event("one", at(9))])
    original, message = BROKEN_NOTES[case]
    write_note(note, original)
    before = note.stat()

    with pytest.raises(ProjectionError) as caught:
        project(journal_path, vault)

    assert message in caught.value.message
    assert note.read_bytes() == original
    assert note.stat().st_mtime_ns == before.st_mtime_ns
    assert os.listdir(note.parent) == [note.name]
    with pytest.raises(ProjectionError):
        project(journal_path, vault, dry_run=True)


def test_existing_mode_is_kept_and_new_note_follows_umask(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(journal_path, [event("one", at(9))])
    project(journal_path, vault)
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(note.stat().st_mode) == 0o666 & ~mask

    note.chmod(0o640)
    record(journal_path, [event("two", at(10))])
    assert project(journal_path, vault).changed
    assert stat.S_IMODE(note.stat().st_mode) == 0o640
    assert b"two" in note.read_bytes()


def test_symlinked_note_stays_a_link(journal_path: Path, vault: Path, note: Path) -> None:
    record(journal_path, [event("one", at(9))])
    real = vault / "elsewhere" / "monday.md"
    real.parent.mkdir()
    real.write_bytes(b"mine\n")
    note.parent.mkdir()
    note.symlink_to(real)

    project(journal_path, vault)

    assert note.is_symlink()
    assert real.read_bytes().startswith(b"mine\n\n" + START)


def test_note_changed_during_write_is_not_overwritten(vault: Path, note: Path) -> None:
    write_note(note, b"first\n")
    seen = note.stat()
    note.write_bytes(b"edited by someone else, longer\n")

    with pytest.raises(_NoteChanged):
        _replace_atomically(note, b"ours\n", seen, note)

    assert note.read_bytes() == b"edited by someone else, longer\n"
    assert os.listdir(note.parent) == [note.name]


def test_malformed_journal_lines_are_skipped_and_counted(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(journal_path, [event("one", at(9))])
    with journal_path.open("ab") as handle:
        handle.write(b"{not json\n")
    result = project(journal_path, vault)
    assert (result.events, result.malformed) == (1, 1)
    assert b"- 09:00 **claude**" in note.read_bytes()


def test_unreadable_journal_is_a_clear_error(journal_path: Path, vault: Path, note: Path) -> None:
    journal_path.mkdir(parents=True)
    with pytest.raises(UrchinError, match="cannot read the journal"):
        project(journal_path, vault)
    assert not note.parent.exists()


# -- folders that cannot be written ----------------------------------------------------


def test_daily_being_a_file_fails_even_for_root(
    journal_path: Path, vault: Path, urchin: Urchin
) -> None:
    record(journal_path, [event("one", datetime.now(UTC))])
    (vault / "daily").write_bytes(b"not a folder")

    result = urchin("vault", "project")

    assert result.code == 1
    assert "is not a folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert (vault / "daily").read_bytes() == b"not a folder"


def test_note_path_being_a_folder_fails(journal_path: Path, vault: Path, note: Path) -> None:
    note.mkdir(parents=True)
    with pytest.raises(ProjectionError, match="not a regular file"):
        project(journal_path, vault)
    assert note.is_dir()
    assert list(note.iterdir()) == []


def test_missing_vault_root_fails_without_creating_it(
    journal_path: Path, isolated_home: Path
) -> None:
    missing = isolated_home / "nowhere"
    with pytest.raises(ProjectionError, match="does not exist"):
        project_daily_note(journal_path, missing, Window.for_day(DAY, UTC))
    assert not missing.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders anyway")
def test_read_only_folder_fails_and_leaves_note_untouched(
    journal_path: Path, vault: Path, note: Path
) -> None:
    record(journal_path, [event("one", at(9))])
    original = write_note(note, b"my notes\n")
    note.parent.chmod(0o500)
    try:
        with pytest.raises(ProjectionError, match="writable"):
            project(journal_path, vault)
        assert note.read_bytes() == original
        assert os.listdir(note.parent) == [note.name]
    finally:
        note.parent.chmod(0o700)

    note.unlink()
    note.parent.rmdir()
    vault.chmod(0o500)
    try:
        with pytest.raises(ProjectionError, match="cannot create the folder"):
            project(journal_path, vault)
        assert os.listdir(vault) == []
    finally:
        vault.chmod(0o700)


# -- the command line ------------------------------------------------------------------


def test_cli_json_with_date_in_local_time(
    journal_path: Path, vault: Path, note: Path, urchin: Urchin
) -> None:
    record(
        journal_path,
        [
            event("late utc, early local", datetime(2026, 5, 3, 20, 0, tzinfo=UTC)),
            event("afternoon", datetime(2026, 5, 4, 10, 15, tzinfo=UTC), source="git"),
            event("next local day", datetime(2026, 5, 4, 19, 0, tzinfo=UTC)),
        ],
    )
    india = {"TZ": "IST-05:30"}  # POSIX form: needs no tz database

    first = urchin("vault", "project", "--date", "2026-05-04", "--json", env=india)

    assert first.code == 0, first.stderr
    assert first.json() == {
        "path": str(note),
        "created": True,
        "appended": False,
        "events": 2,
        "changed": True,
    }
    data = note.read_bytes()
    inner = between_markers(data).decode()
    assert "- 01:30 **claude** — late utc, early local" in inner
    assert "- 15:45 **git** — afternoon" in inner
    assert "next local day" not in inner

    second = urchin("vault", "project", "--date", "2026-05-04", "--json", env=india)
    assert second.code == 0, second.stderr
    assert second.json()["changed"] is False
    assert note.read_bytes() == data


def test_cli_default_window_writes_todays_note(
    vault: Path, urchin: Urchin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    assert urchin("ingest", "just now", "--no-workspace").code == 0
    before = datetime.now(UTC).date()

    result = urchin("vault", "project", "--json")

    after = datetime.now(UTC).date()
    assert result.code == 0, result.stderr
    body = result.json()
    assert Path(body["path"]).name in {f"{before}.md", f"{after}.md"}
    assert body["events"] == 1
    assert b"just now" in Path(body["path"]).read_bytes()


def test_cli_dry_run_prints_block_and_writes_nothing(
    journal_path: Path, vault: Path, note: Path, urchin: Urchin
) -> None:
    record(journal_path, [event("one", at(9))])

    result = urchin("vault", "project", "--date", DAY.isoformat(), "--dry-run", env={"TZ": "UTC"})

    assert result.code == 0, result.stderr
    assert result.stdout.startswith("<!-- URCHIN:start -->\n### urchin: 1 event\n")
    assert result.stdout.endswith("- 09:00 **claude** — one\n<!-- URCHIN:end -->\n")
    assert not note.parent.exists()

    as_json = urchin("vault", "project", "--date", DAY.isoformat(), "--dry-run", "--json")
    assert as_json.json()["block"].startswith("<!-- URCHIN:start -->\n")
    assert not note.parent.exists()


def test_cli_broken_markers_exit_1_and_note_untouched(
    journal_path: Path, vault: Path, note: Path, urchin: Urchin
) -> None:
    original = write_note(note, b"top\n" + END + b"\n" + START + b"\nbottom")

    plain = urchin("vault", "project", "--date", DAY.isoformat())
    as_json = urchin("vault", "project", "--date", DAY.isoformat(), "--json")

    assert plain.code == 1
    assert "<!-- URCHIN:end --> (line 2) before <!-- URCHIN:start --> (line 3)" in plain.stderr
    assert "Traceback" not in plain.stderr
    assert as_json.code == 1
    assert json.loads(as_json.stderr)["error"]["code"] == "projection"
    assert note.read_bytes() == original


@pytest.mark.parametrize(
    "args",
    [
        ("--date", "2026-02-30"),
        ("--date", "yesterday"),
        ("--date", "2026-05-04", "--hours", "3"),
        ("--hours", "0"),
        ("--hours", "-1"),
    ],
)
def test_cli_rejects_bad_options_with_usage_error(
    vault: Path, urchin: Urchin, args: tuple[str, ...]
) -> None:
    result = urchin("vault", "project", *args)
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert "yesterday" not in result.stderr
    assert not (vault / "daily").exists()


def test_cli_missing_vault_is_a_clear_error(isolated_home: Path, urchin: Urchin) -> None:
    result = urchin("vault", "project")
    assert result.code == 1
    assert "does not exist" in result.stderr
    assert "vault_root" in result.stderr
    assert not (isolated_home / "brain").exists()
