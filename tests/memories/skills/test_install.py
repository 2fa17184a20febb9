"""The installer's rules, exercised in-process on real folders."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import ConflictError, MemoriesError, UsageError
from memories.skills import (
    SKILL_FILE,
    Skill,
    Target,
    bundled_skill,
    install,
    plan,
    target_for,
)


def _all_user_targets() -> list[Target]:
    return [target_for(client, "user") for client in ("claude-code", "codex", "opencode")]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@contextlib.contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """``folder`` made unwritable, for root too (an immutable attribute: root ignores modes)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)


def test_locations_follow_each_clients_documentation(isolated_home: Path) -> None:
    home = isolated_home
    assert [t.file for t in _all_user_targets()] == [
        home / ".claude/skills/memories/SKILL.md",
        home / ".agents/skills/memories/SKILL.md",
        home / ".config/opencode/skills/memories/SKILL.md",
    ]
    project = home / "proj"
    assert [
        target_for(c, "project", project_dir=project).file
        for c in ("claude-code", "codex", "opencode")
    ] == [
        project / ".claude/skills/memories/SKILL.md",
        project / ".agents/skills/memories/SKILL.md",
        project / ".opencode/skills/memories/SKILL.md",
    ]
    assert (
        target_for("codex", "user", legacy_codex=True).file
        == home / ".codex/skills/memories/SKILL.md"
    )


def test_unknown_client_scope_or_misplaced_legacy_flag_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown client"):
        target_for("cursor", "user")
    with pytest.raises(UsageError, match="unknown scope"):
        target_for("codex", "global")
    with pytest.raises(UsageError, match="legacy"):
        target_for("codex", "project", legacy_codex=True)


def test_installs_byte_for_byte_and_keeps_identical_files(isolated_home: Path) -> None:
    targets = _all_user_targets()
    first = install(targets)
    assert [o.result for o in first] == ["created"] * 3
    for target in targets:
        assert target.file.read_bytes() == bundled_skill().data
    stamps = [t.file.stat().st_mtime_ns for t in targets]
    inodes = [t.file.stat().st_ino for t in targets]
    again = install(targets)
    assert [o.result for o in again] == ["unchanged"] * 3
    assert [t.file.stat().st_mtime_ns for t in targets] == stamps
    assert [t.file.stat().st_ino for t in targets] == inodes
    # No temporary file is left beside any of them.
    assert all(os.listdir(t.folder) == [SKILL_FILE] for t in targets)


def test_differing_file_needs_force_and_nothing_is_written_anywhere(isolated_home: Path) -> None:
    targets = _all_user_targets()
    mine = targets[0].file
    mine.parent.mkdir(parents=True)
    mine.write_text("my own notes\n", encoding="utf-8")
    before = _tree(isolated_home)
    with pytest.raises(ConflictError, match="--force") as caught:
        install(targets)
    assert "nothing was installed" in caught.value.message
    assert _tree(isolated_home) == before  # the other two targets were not created either
    assert mine.read_text(encoding="utf-8") == "my own notes\n"
    outcomes = install(targets, force=True)
    assert [o.result for o in outcomes] == ["replaced", "created", "created"]
    assert mine.read_bytes() == bundled_skill().data


def test_siblings_and_client_configuration_are_left_alone(isolated_home: Path) -> None:
    skills = isolated_home / ".claude" / "skills"
    (skills / "other").mkdir(parents=True)
    (skills / "other" / SKILL_FILE).write_text("---\nname: other\n---\n", encoding="utf-8")
    settings = isolated_home / ".claude" / "settings.json"
    settings.write_text('{"theme": "dark"}\n', encoding="utf-8")
    (skills / "memories").mkdir()
    (skills / "memories" / "notes.txt").write_text("keep me", encoding="utf-8")
    install([target_for("claude-code", "user")])
    assert (skills / "other" / SKILL_FILE).read_text(encoding="utf-8") == "---\nname: other\n---\n"
    assert settings.read_text(encoding="utf-8") == '{"theme": "dark"}\n'
    assert (skills / "memories" / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("linked", ["folder", "file"])
def test_a_link_below_the_skills_root_is_refused(isolated_home: Path, linked: str) -> None:
    target = target_for("claude-code", "user")
    elsewhere = isolated_home / "elsewhere"
    elsewhere.mkdir()
    target.root.mkdir(parents=True)
    if linked == "folder":
        target.folder.symlink_to(elsewhere, target_is_directory=True)
    else:
        target.folder.mkdir()
        (elsewhere / SKILL_FILE).write_bytes(bundled_skill().data)
        target.file.symlink_to(elsewhere / SKILL_FILE)
    others = [target_for("codex", "user")]
    with pytest.raises(ConflictError, match="is a link"):
        install([*others, target], force=True)
    assert not others[0].root.exists()  # preflight stopped everything
    assert sorted(os.listdir(elsewhere)) == ([] if linked == "folder" else [SKILL_FILE])


def test_a_linked_skills_root_is_fine(isolated_home: Path) -> None:
    dotfiles = isolated_home / "dotfiles" / "skills"
    dotfiles.mkdir(parents=True)
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".claude" / "skills").symlink_to(dotfiles, target_is_directory=True)
    install([target_for("claude-code", "user")])
    assert (dotfiles / "memories" / SKILL_FILE).read_bytes() == bundled_skill().data


def test_a_file_in_the_way_of_a_folder_stops_everything(isolated_home: Path) -> None:
    (isolated_home / ".agents").write_text("not a folder", encoding="utf-8")
    before = _tree(isolated_home)
    with pytest.raises(ConflictError, match="not a folder"):
        install(_all_user_targets())
    assert _tree(isolated_home) == before


def test_an_unwritable_target_stops_everything_and_leaves_nothing(isolated_home: Path) -> None:
    locked = isolated_home / ".config"
    locked.mkdir()
    before = _tree(isolated_home)
    with _unwritable(locked), pytest.raises(MemoriesError, match="nothing was installed") as caught:
        install(_all_user_targets())
    assert caught.value.exit_code == 1
    assert str(locked) in caught.value.message
    assert _tree(isolated_home) == before  # not even the Claude Code and Codex folders


def test_a_file_created_meanwhile_is_never_clobbered(isolated_home: Path) -> None:
    target = target_for("opencode", "user")

    def someone_else_writes() -> None:
        target.file.write_text("theirs\n", encoding="utf-8")

    with pytest.raises(ConflictError, match="someone else"):
        install([target], on_staged=someone_else_writes)
    assert target.file.read_text(encoding="utf-8") == "theirs\n"
    assert os.listdir(target.folder) == [SKILL_FILE]  # our temporary file is gone


def test_the_same_skill_created_meanwhile_counts_as_unchanged(isolated_home: Path) -> None:
    target = target_for("codex", "user")
    [outcome] = install([target], on_staged=lambda: target.file.write_bytes(bundled_skill().data))
    assert outcome.result == "unchanged"


def test_two_installers_at_once_one_wins_and_neither_clobbers(isolated_home: Path) -> None:
    target = target_for("claude-code", "project", project_dir=isolated_home / "proj")
    ours = bundled_skill()
    other = Skill(ours.name, "999", ours.description, ours.data + b"\n<!-- another build -->\n")
    both_staged = threading.Barrier(2, timeout=30)
    results: dict[str, object] = {}

    def run(name: str, skill: Skill) -> None:
        try:
            results[name] = install([target], skill=skill, on_staged=both_staged.wait)[0].result
        except ConflictError as exc:
            results[name] = exc

    threads = [
        threading.Thread(target=run, args=("ours", ours)),
        threading.Thread(target=run, args=("other", other)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(type(v).__name__ for v in results.values()) == ["ConflictError", "str"]
    winner = next(name for name, value in results.items() if value == "created")
    expected = ours if winner == "ours" else other
    assert target.file.read_bytes() == expected.data
    assert os.listdir(target.folder) == [SKILL_FILE]


def test_plan_writes_nothing(isolated_home: Path) -> None:
    before = _tree(isolated_home)
    assert [p.action for p in plan(_all_user_targets())] == ["create"] * 3
    assert _tree(isolated_home) == before
