"""Private temporary files for `memories file exec`: created safely, always removed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memories.errors import ConflictError, UsageError
from memories.secrets import fileexec
from memories.secrets.fileexec import child_argv, private_file


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def test_the_file_is_private_and_removed_after_the_block(base: Path) -> None:
    with private_file("kube.yaml", base=str(base)) as (fd, path):
        os.write(fd, b"secret: yes\n")
        assert Path(path).name == "kube.yaml"
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(Path(path).parent).st_mode) == 0o700
        assert fileexec.is_private(path)
        Path(path).with_name("extra").write_text("made by the program", encoding="utf-8")
    assert list(base.iterdir()) == []


def test_the_file_is_removed_when_the_block_fails(base: Path) -> None:
    seen: list[str] = []

    def fail_inside() -> None:
        with private_file(".env", base=str(base)) as (fd, path):
            os.write(fd, b"TOKEN=x\n")
            seen.append(Path(path).name)
            raise RuntimeError("the program failed")

    with pytest.raises(RuntimeError):
        fail_inside()
    assert seen == [".env"] and list(base.iterdir()) == []


def test_a_symlink_planted_at_the_path_is_refused_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere"
    folder = tmp_path / "planted"
    folder.mkdir(mode=0o700)
    (folder / "kube.yaml").symlink_to(target)
    monkeypatch.setattr(fileexec.tempfile, "mkdtemp", lambda **_: str(folder))
    with (
        pytest.raises(ConflictError, match="nothing was written"),
        private_file("kube.yaml", base=str(tmp_path)),
    ):
        pytest.fail("must not be reached")
    assert not target.exists() and not folder.exists()


def test_a_stored_name_cannot_escape_the_folder(base: Path) -> None:
    with private_file("../../etc/passwd", base=str(base)) as (_, path):
        assert Path(path).parent.parent == base and Path(path).name == "passwd"


def test_the_placeholder_is_required_and_replaced() -> None:
    assert child_argv(["cat", "{}"], "/p") == ["cat", "/p"]
    assert child_argv(["tool", "--config={}"], "/p") == ["tool", "--config=/p"]
    with pytest.raises(UsageError, match=r"\{\}"):
        child_argv(["cat", "file"], "/p")
    with pytest.raises(UsageError):
        child_argv([], "/p")
