"""Shell history collectors (bash, zsh, fish) against realistic history files."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CheckpointStore, Collector, CollectResult
from urchin.collectors.shell import (
    FishCollector,
    ShellCollector,
    ZshCollector,
    parse_bash,
    parse_zsh,
)
from urchin.errors import UrchinError
from urchin.event import Event, EventKind


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin"


def collect(collector: Collector, data_dir: Path, store: CheckpointStore | None = None) -> Any:
    return run_once(collector, data_dir, store)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def contents(data_dir: Path) -> list[str]:
    return [event.content for event in events(data_dir)]


def rewrite(path: Path, data: bytes) -> None:
    """Replace a file the way shells do: write a temp file and rename it (new inode)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


BASH_FIXTURE = b"#1700000000\nls\n#1700000005\nfor i in 1 2; do\n echo $i\ndone\ngit sta"


# -- bash -----------------------------------------------------------------------------


def test_bash_first_run_groups_timestamped_multiline_entries(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(BASH_FIXTURE)

    result = collect(ShellCollector(), data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [e.content for e in got] == ["ls", "for i in 1 2; do\n echo $i\ndone"]
    assert [e.timestamp for e in got] == [
        datetime.fromtimestamp(1700000000, UTC),
        datetime.fromtimestamp(1700000005, UTC),
    ]
    assert all(e.source == "shell" and e.kind is EventKind.COMMAND for e in got)
    assert all(e.workspace is None for e in got)
    assert all(e.actor is not None for e in got)


def test_bash_torn_tail_is_read_once_complete_and_timestamps_never_become_commands(
    data_dir: Path,
) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(BASH_FIXTURE)
    collect(ShellCollector(), data_dir)

    append(history, b"tus\n#1700000009\nmake test\n")
    result = collect(ShellCollector(), data_dir)

    assert result.new == 2
    all_content = contents(data_dir)
    assert all_content[-2:] == ["git status", "make test"]
    assert not any(c.startswith("#17") for c in all_content)
    assert "git sta" not in all_content


def test_bash_rerun_emits_nothing(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\npwd\n")
    collect(ShellCollector(), data_dir)

    again = collect(ShellCollector(), data_dir)

    assert (again.new, again.errors) == (0, [])
    assert contents(data_dir) == ["ls", "pwd"]


def test_bash_plain_history_uses_file_mtime_and_keeps_repeats(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\ncd /tmp\nls\n\n")
    os.utime(history, (1710000000, 1710000000))

    collect(ShellCollector(), data_dir)

    got = events(data_dir)
    assert [e.content for e in got] == ["ls", "cd /tmp", "ls"]
    assert {e.timestamp for e in got} == {datetime.fromtimestamp(1710000000, UTC)}
    assert len({e.id for e in got}) == 3


def test_bash_holds_back_a_timestamp_whose_command_is_not_written_yet(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"#1700000000\nls\n#1700000001\n")
    collect(ShellCollector(), data_dir)
    assert contents(data_dir) == ["ls"]

    append(history, b"whoami\n")
    collect(ShellCollector(), data_dir)

    got = events(data_dir)
    assert [e.content for e in got] == ["ls", "whoami"]
    assert got[1].timestamp == datetime.fromtimestamp(1700000001, UTC)


def test_bash_honours_histfile_but_not_another_shells(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    custom = tmp_path / "custom_history"
    custom.write_bytes(b"echo custom\n")
    monkeypatch.setenv("HISTFILE", str(custom))
    assert ShellCollector().path == custom

    collect(ShellCollector(), data_dir)
    assert contents(data_dir) == ["echo custom"]

    monkeypatch.setenv("HISTFILE", str(tmp_path / ".zsh_history"))
    assert ShellCollector().path == Path(os.environ["HOME"]) / ".bash_history"
    assert ZshCollector().path == tmp_path / ".zsh_history"


def test_missing_history_is_a_no_op(data_dir: Path) -> None:
    result = collect(ShellCollector(), data_dir)

    assert result.available is False
    assert result.errors == []
    assert not (data_dir / "checkpoints").exists()


def test_crash_between_append_and_checkpoint_loses_and_duplicates_nothing(
    data_dir: Path,
) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"#1700000000\nls\n")
    collect(ShellCollector(), data_dir)
    append(history, b"#1700000001\nmake\n#1700000002\nmake install\n")

    class DiskFull(CheckpointStore):
        def save(self, name: str, state: dict[str, Any]) -> None:
            raise UrchinError("cannot write checkpoint: No space left on device")

    crashed = collect(ShellCollector(), data_dir, DiskFull(data_dir))
    assert crashed.new == 2 and crashed.errors
    append(history, b"#1700000003\nmake clean\n")

    recovered = collect(ShellCollector(), data_dir)

    assert recovered.errors == []
    assert contents(data_dir) == ["ls", "make", "make install", "make clean"]
    assert recovered.new == 1 and recovered.skipped == 2


def test_restoring_an_older_checkpoint_duplicates_nothing(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\n")
    collect(ShellCollector(), data_dir)
    checkpoint = CheckpointStore(data_dir).path("shell")
    older = checkpoint.read_bytes()
    append(history, b"pwd\nid\n")
    collect(ShellCollector(), data_dir)

    checkpoint.write_bytes(older)  # as if the process died before the rename
    result = collect(ShellCollector(), data_dir)

    assert result.new == 0
    assert contents(data_dir) == ["ls", "pwd", "id"]


def test_bash_rewrite_after_trim_emits_only_the_new_commands(data_dir: Path) -> None:
    """bash without histappend writes its whole list at exit, trimmed to HISTFILESIZE."""
    history = Path(os.environ["HOME"]) / ".bash_history"
    old = [f"cmd {i}" for i in range(40)] + ["ls", "git status"]
    history.write_bytes("".join(f"{c}\n" for c in old).encode())
    collect(ShellCollector(), data_dir)

    # Trimmed at the top; the session re-ran `ls` (already in the file) and ran one new command.
    trimmed = [*old[5:], "ls", "vim notes.md"]
    rewrite(history, "".join(f"{c}\n" for c in trimmed).encode())
    result = collect(ShellCollector(), data_dir)

    assert result.errors == []
    assert contents(data_dir)[len(old) :] == ["ls", "vim notes.md"]
    assert collect(ShellCollector(), data_dir).new == 0


def test_bash_rewrite_by_a_concurrent_shell_keeps_its_commands_only_once(data_dir: Path) -> None:
    """Shell A started with F; shell B appended; A exits and overwrites F + its own commands."""
    history = Path(os.environ["HOME"]) / ".bash_history"
    base = ["cd project", "make", "ls", "make test", "git diff"]
    history.write_bytes("".join(f"{c}\n" for c in [*base, "b: one", "b: two"]).encode())
    collect(ShellCollector(), data_dir)

    rewrite(history, "".join(f"{c}\n" for c in [*base, "a: ls", "make"]).encode())
    collect(ShellCollector(), data_dir)

    assert contents(data_dir)[7:] == ["a: ls", "make"]


def test_bash_timestamped_history_truncated_in_place(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    old = b"".join(b"#%d\nstep %d\n" % (1700000000 + i, i) for i in range(10))
    history.write_bytes(old)
    collect(ShellCollector(), data_dir)
    inode = history.stat().st_ino

    kept = b"".join(b"#%d\nstep %d\n" % (1700000000 + i, i) for i in range(6, 10))
    with history.open("wb") as handle:  # same inode, shorter: HISTFILESIZE trim
        handle.write(kept + b"#1700000100\nstep 3\n")
    assert history.stat().st_ino == inode

    result = collect(ShellCollector(), data_dir)

    assert result.new == 1
    assert contents(data_dir)[-1] == "step 3"
    assert events(data_dir)[-1].timestamp == datetime.fromtimestamp(1700000100, UTC)


def test_bash_same_size_rewrite_is_noticed(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"echo aaa\necho bbb\n")
    collect(ShellCollector(), data_dir)

    with history.open("wb") as handle:  # same inode, same length, different content
        handle.write(b"echo aaa\necho ccc\n")
    collect(ShellCollector(), data_dir)

    assert contents(data_dir) == ["echo aaa", "echo bbb", "echo ccc"]


def test_rewrite_that_keeps_the_head_and_grows_is_noticed(data_dir: Path) -> None:
    """A long history overwritten in place by another shell: same head, larger file."""
    history = Path(os.environ["HOME"]) / ".bash_history"
    common = [f"echo common line number {i}" for i in range(300)]  # well over 4 KiB
    history.write_bytes("".join(f"{c}\n" for c in [*common, "b: one", "b: two"]).encode())
    collect(ShellCollector(), data_dir)

    with history.open("wb") as handle:
        handle.write(
            "".join(f"{c}\n" for c in [*common, "a: first", "a: second", "a: third"]).encode()
        )
    collect(ShellCollector(), data_dir)

    assert contents(data_dir)[302:] == ["a: first", "a: second", "a: third"]


def test_unreadable_history_reports_an_error_and_keeps_the_checkpoint(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\n")
    collect(ShellCollector(), data_dir)
    checkpoint = CheckpointStore(data_dir).path("shell")
    before = checkpoint.read_bytes()
    append(history, b"secret-command --token abc\n")
    deny_reading(history, monkeypatch)

    result = collect(ShellCollector(), data_dir)

    assert result.available and result.new == 0
    assert len(result.errors) == 1 and "Permission denied" in result.errors[0]
    assert "secret" not in result.errors[0]
    assert checkpoint.read_bytes() == before


def test_oversized_history_line_is_skipped_not_loaded(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\n" + b"x" * (2 * 1024 * 1024) + b"\npwd\n")

    result = collect(ShellCollector(), data_dir)

    assert contents(data_dir) == ["ls", "pwd"]
    assert result.skipped == 1


def deny_reading(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``path`` unreadable; as root, permission bits do not stop reads, so refuse open."""
    path.chmod(0)
    if os.geteuid() != 0:
        return
    real_open = os.open
    target = str(path)

    def guarded(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(file) == target:
            raise PermissionError(13, "Permission denied", target)
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


# -- zsh ------------------------------------------------------------------------------

ZSH_FIXTURE = (
    b": 1700000000:0;ls\n"
    b": 1700000003:2;echo a\\\nb\n"
    b": 1700000004:0;echo \xc5\x83\xbb\n"  # "echo ś" with its 0x9b byte metafied
)


def test_zsh_extended_history_with_continuations_and_metafied_bytes(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".zsh_history"
    history.write_bytes(ZSH_FIXTURE)

    result = collect(ZshCollector(), data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [e.content for e in got] == ["ls", "echo a\nb", "echo ś"]
    assert [e.source for e in got] == ["zsh"] * 3
    assert got[1].timestamp == datetime.fromtimestamp(1700000003, UTC)
    assert got[1].meta == {"duration_secs": 2}
    assert got[0].meta is None


def test_zsh_holds_an_unfinished_continuation(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".zsh_history"
    history.write_bytes(b": 1700000000:0;ls\n: 1700000001:0;for f in *; do\\\n")
    collect(ZshCollector(), data_dir)
    assert contents(data_dir) == ["ls"]

    append(history, b"  echo $f\\\ndone\n")
    collect(ZshCollector(), data_dir)

    assert contents(data_dir) == ["ls", "for f in *; do\n  echo $f\ndone"]


def test_zsh_rewrite_to_savehist_emits_only_new(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".zsh_history"
    lines = [b": %d:0;cmd %d\n" % (1700000000 + i, i) for i in range(20)]
    history.write_bytes(b"".join(lines))
    collect(ZshCollector(), data_dir)

    rewrite(history, b"".join(lines[8:]) + b": 1700000500:1;cmd 3\n")
    result = collect(ZshCollector(), data_dir)

    assert result.new == 1
    assert contents(data_dir).count("cmd 3") == 2


def test_parsers_report_where_the_next_read_starts() -> None:
    lines = [(0, b"#1700000000"), (12, b"ls"), (15, b"#1700000001")]
    entries, resume = parse_bash(lines, b"#1700000000\n", 27)
    assert [e.command for e in entries] == ["ls"] and resume == 15

    entries, resume = parse_zsh([(0, b": 1:0;a\\")], b"", 9)
    assert entries == [] and resume == 0


# -- fish -----------------------------------------------------------------------------

FISH_FIXTURE = (
    b"- cmd: cd ~/src\n"
    b"  when: 1700000000\n"
    b"- cmd: vim README.md\n"
    b"  when: 1700000010\n"
    b"  paths:\n"
    b"    - README.md\n"
    b"- cmd: echo one\\ntwo C:\\\\dir\n"
    b"  when: 1700000020\n"
    b"- cmd: vim"
)


def fish_history(home: Path) -> Path:
    path = home / ".local" / "share" / "fish" / "fish_history"
    path.parent.mkdir(parents=True)
    return path


def test_fish_history_by_line_prefix_with_escapes_and_torn_entry(data_dir: Path) -> None:
    history = fish_history(Path(os.environ["HOME"]))
    history.write_bytes(FISH_FIXTURE)

    result = collect(FishCollector(), data_dir)

    assert result.ok, result.errors
    got = events(data_dir)
    assert [e.content for e in got] == ["cd ~/src", "vim README.md", "echo one\ntwo C:\\dir"]
    assert got[1].timestamp == datetime.fromtimestamp(1700000010, UTC)
    assert {e.source for e in got} == {"fish"}


def test_fish_entry_waits_for_its_when_line(data_dir: Path) -> None:
    history = fish_history(Path(os.environ["HOME"]))
    history.write_bytes(FISH_FIXTURE)
    collect(FishCollector(), data_dir)

    append(history, b" notes.md\n")
    collect(FishCollector(), data_dir)
    assert len(events(data_dir)) == 3

    append(history, b"  when: 1700000030\n")
    collect(FishCollector(), data_dir)
    assert contents(data_dir)[-1] == "vim notes.md"


def test_fish_vacuum_rewrite_emits_only_unseen_items(data_dir: Path) -> None:
    history = fish_history(Path(os.environ["HOME"]))
    history.write_bytes(
        b"- cmd: ls\n  when: 1700000000\n- cmd: make\n  when: 1700000001\n"
        b"- cmd: ls\n  when: 1700000002\n"
    )
    collect(FishCollector(), data_dir)

    # Vacuum keeps the newest copy of each command, merges other sessions' items,
    # sorts by time and renames a temp file over the history.
    rewrite(
        history,
        b"- cmd: make\n  when: 1700000001\n- cmd: other session\n  when: 1700000001\n"
        b"- cmd: ls\n  when: 1700000002\n- cmd: make\n  when: 1700000050\n",
    )
    result = collect(FishCollector(), data_dir)

    assert result.new == 2
    assert contents(data_dir) == ["ls", "make", "ls", "other session", "make"]
    assert collect(FishCollector(), data_dir).new == 0


def test_checkpoint_is_json_with_file_identity(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".bash_history"
    history.write_bytes(b"ls\n")
    collect(ShellCollector(), data_dir)

    state = json.loads(CheckpointStore(data_dir).path("shell").read_text(encoding="utf-8"))
    file_state = state["files"][str(history)]["file"]
    assert file_state["inode"] == history.stat().st_ino
    assert file_state["offset"] == file_state["size"] == 3
    assert len(file_state["head_sha256"]) == 64


def test_result_is_reported_per_collector(data_dir: Path) -> None:
    history = Path(os.environ["HOME"]) / ".zsh_history"
    history.write_bytes(b"plain zsh command\n")

    result: CollectResult = collect(ZshCollector(), data_dir)

    assert result.to_json()["name"] == "zsh"
    assert result.new == 1
    assert contents(data_dir) == ["plain zsh command"]


def test_history_pointed_at_dev_null_or_a_fifo_is_skipped(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HISTFILE", os.devnull)
    assert collect(ShellCollector(), data_dir).available is False

    fifo = tmp_path / "history.fifo"
    os.mkfifo(fifo)
    assert collect(ShellCollector(fifo), data_dir).available is False


OLD_FISH_FIXTURE = (
    b"- cmd: ls\n   when: 1600000000\n- cmd: cd /tmp\n   when: 1600000005\n   paths:\n     - /tmp\n"
)


def test_fish_history_with_other_indentation_keeps_times_and_its_last_entry(
    data_dir: Path,
) -> None:
    history = fish_history(Path(os.environ["HOME"]))
    history.write_bytes(OLD_FISH_FIXTURE)

    result = collect(FishCollector(), data_dir)

    assert result.ok, result.errors
    assert [(e.content, e.timestamp) for e in events(data_dir)] == [
        ("ls", datetime.fromtimestamp(1600000000, UTC)),
        ("cd /tmp", datetime.fromtimestamp(1600000005, UTC)),
    ]
    collect(FishCollector(), data_dir)
    assert len(events(data_dir)) == 2


def test_fish_last_entry_without_a_when_line_is_recorded_once_something_follows_it(
    data_dir: Path,
) -> None:
    history = fish_history(Path(os.environ["HOME"]))
    history.write_bytes(b"- cmd: make\n  paths:\n    - Makefile\n")

    collect(FishCollector(), data_dir)

    assert contents(data_dir) == ["make"]
