"""Config files are replaced atomically with their mode kept and a private backup, links are
followed for user files and refused inside projects, and a run that would fail leaves every
file as it was."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from memories.clients.base import Target
from memories.clients.errors import ConfigChangedError, UnreadableConfigError
from memories.clients.files import read_config, replace_config
from memories.clients.setup import Change, apply, preview


def _names(folder: Path) -> list[str]:
    """What is in ``folder`` apart from the test's own home."""
    return sorted(p.name for p in folder.iterdir() if p.name != "home")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _adding(key: str) -> Callable[[str | None, Path], str]:
    def edit(text: str | None, where: Path) -> str:
        from memories.clients.base import parse_json

        doc = parse_json(text, where)
        doc.set([key], True)
        return doc.text

    return edit


def test_replace_keeps_the_mode_and_backs_up_the_original_privately(tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text('{"a": 1}\n', encoding="utf-8")
    config.chmod(0o640)
    [outcome] = apply([Change(Target(config), "test", _adding("b"))])
    assert outcome.action == "updated"
    assert config.read_text(encoding="utf-8") == '{"a": 1, "b": true}\n'
    assert _mode(config) == 0o640
    assert outcome.backup is not None
    assert outcome.backup.read_text(encoding="utf-8") == '{"a": 1}\n'
    assert _mode(outcome.backup) == 0o600
    assert outcome.backup.name.startswith("settings.json.memories-backup-")
    # No temporary file is left behind.
    assert _names(tmp_path) == sorted([config.name, outcome.backup.name])


def test_new_files_are_private_for_users_and_readable_in_projects(tmp_path: Path) -> None:
    user = tmp_path / "home" / ".cursor" / "mcp.json"
    project = tmp_path / "proj" / ".cursor" / "mcp.json"
    (tmp_path / "proj").mkdir()
    apply([Change(Target(user), "t", _adding("x"))])
    apply([Change(Target(project, tmp_path / "proj"), "t", _adding("x"))])
    assert _mode(user) == 0o600 and _mode(user.parent) == 0o700
    assert _mode(project) == 0o644


def test_a_user_level_link_is_followed_and_survives(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    real.write_text("{}", encoding="utf-8")
    link = tmp_path / ".claude.json"
    link.symlink_to(real)
    [outcome] = apply([Change(Target(link), "t", _adding("x"))])
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == '{\n  "x": true\n}'
    assert outcome.backup is not None and outcome.backup.parent == dotfiles


def test_a_link_inside_a_project_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    elsewhere = tmp_path / "victim.json"
    elsewhere.write_text("{}", encoding="utf-8")
    (project / ".mcp.json").symlink_to(elsewhere)
    with pytest.raises(UnreadableConfigError) as caught:
        apply([Change(Target(project / ".mcp.json", project), "t", _adding("x"))])
    assert "symbolic link" in caught.value.message
    assert elsewhere.read_text(encoding="utf-8") == "{}"
    # A linked folder on the way counts too.
    (project / ".cursor").symlink_to(tmp_path)
    with pytest.raises(UnreadableConfigError):
        preview([Change(Target(project / ".cursor" / "victim.json", project), "t", _adding("x"))])


def test_a_failing_file_stops_the_run_before_any_write(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text("{}", encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,, }', encoding="utf-8")
    changes = [Change(Target(good), "t", _adding("x")), Change(Target(bad), "t", _adding("x"))]
    with pytest.raises(UnreadableConfigError) as caught:
        apply(changes)
    assert "nothing was changed" in caught.value.message
    assert good.read_text(encoding="utf-8") == "{}"
    assert _names(tmp_path) == ["bad.json", "good.json"]


@pytest.mark.parametrize("content", [b"\xff\xfe{}", b"{}"])
def test_unreadable_things_are_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "c.json"
    if content == b"{}":
        path.mkdir()  # a folder where the file should be
    else:
        path.write_bytes(content)
    with pytest.raises(UnreadableConfigError):
        read_config(path)


def test_a_file_rewritten_during_the_edit_is_not_clobbered(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{}", encoding="utf-8")
    config = read_config(path)
    path.write_text('{"client": "wrote this"}', encoding="utf-8")
    with pytest.raises(ConfigChangedError):
        replace_config(config, '{"ours": 1}')
    assert path.read_text(encoding="utf-8") == '{"client": "wrote this"}'
    assert _names(tmp_path) == ["c.json"]


def test_apply_starts_over_when_the_client_wrote_in_between(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"n": 0}', encoding="utf-8")
    writes = []

    def edit(text: str | None, where: Path) -> str:
        # The client rewrites its file right after our first read, once.
        if not writes:
            writes.append(1)
            os.replace(_write(tmp_path / "other", '{"n": 1}'), path)
            return '{"n": 0, "ours": true}'
        assert text == '{"n": 1}'
        return '{"n": 1, "ours": true}'

    [outcome] = apply([Change(Target(path), "t", edit)])
    assert outcome.action == "updated"
    assert path.read_text(encoding="utf-8") == '{"n": 1, "ours": true}'


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_preview_writes_nothing_and_reports_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{\n  "a": 1\n}\n', encoding="utf-8")
    before = path.stat()
    [outcome] = preview([Change(Target(path), "t", _adding("b"))])
    assert outcome.action == "updated"
    assert '+  "b": true' in outcome.diff and '-  "a": 1' in outcome.diff
    assert path.read_text(encoding="utf-8") == '{\n  "a": 1\n}\n'
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert _names(tmp_path) == ["c.json"]
