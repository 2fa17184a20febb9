"""Install the bundled skill into client folders: preflight everything, then publish each file.

The steps, and why:

1. **Preflight** every target before touching any: what is in the way (a link below the skills
   root, a file where a folder belongs, a differing ``SKILL.md`` without ``force``, a folder
   that cannot be written) is reported for all of them at once, and nothing is written.
2. **Stage** each file as a synced temporary file in its destination folder (creating the
   folders it needs). A failure here (a full disk, an immutable folder that passed the
   permission check, as happens for root) removes every temporary file and folder staged so
   far, so a failed run still leaves nothing behind.
3. **Publish** each staged file: a new ``SKILL.md`` is hard-linked into place, which fails
   rather than replacing a file another process created meanwhile (if that file is the same
   skill, the outcome is "unchanged"; otherwise it is kept and reported as a conflict); a
   forced replacement is an atomic rename. The folder is synced after each.

This is per-file atomicity, not a transaction across clients. The folders are opened once
without following links (``O_NOFOLLOW`` relative to the root's descriptor), so a link swapped in
after the preflight is refused, not followed. Nothing else in a client's folders (sibling
skills, its configuration) is read or changed. This module never touches the memories data
home, the store or the daemon.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from memories.errors import ConflictError, MemoriesError
from memories.skills.bundle import SKILL_FILE, SKILL_NAME, Skill, bundled_skill
from memories.skills.targets import Target

__all__ = ["Action", "Outcome", "Planned", "install", "plan"]

Action: TypeAlias = Literal["create", "replace", "unchanged"]
Result: TypeAlias = Literal["created", "replaced", "unchanged"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_LIMIT = 1 << 20  # a SKILL.md larger than this is not ours; compare only this much
_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)


@dataclass(frozen=True, slots=True)
class Planned:
    """What the preflight decided for one target."""

    target: Target
    action: Action


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one target."""

    target: Target
    result: Result


class _Problem(Exception):
    def __init__(self, error: type[MemoriesError], message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _raise_all(problems: Sequence[_Problem], prefix: str) -> None:
    if not problems:
        return
    first = problems[0]
    text = "; ".join(problem.message for problem in problems)
    raise first.error(f"{prefix}{text}")


# -- preflight --------------------------------------------------------------------------------


def _writable(path: Path) -> bool:
    # A hint only: root passes it everywhere, so staging cleans up after a late refusal.
    return os.access(path, os.W_OK | os.X_OK)


def _check_root(root: Path) -> None:
    """The skills root is a folder (links allowed), or can be created under one."""
    if os.path.lexists(root) and not os.path.exists(root):
        raise _Problem(ConflictError, f"{root} is a broken link")
    if os.path.exists(root):
        if not os.path.isdir(root):
            raise _Problem(ConflictError, f"{root} is not a folder")
        return
    anchor = root.parent
    while not os.path.lexists(anchor):
        anchor = anchor.parent
    if not os.path.isdir(anchor):
        raise _Problem(ConflictError, f"cannot create {root}: {anchor} is not a folder")
    if not _writable(anchor):
        raise _Problem(MemoriesError, f"cannot create {root}: {anchor} is not writable")


def _read_file(path: Path, *, dir_fd: int | None = None) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= _READ_LIMIT:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _preflight(target: Target, skill: Skill, *, force: bool) -> Planned:
    _check_root(target.root)
    try:
        folder = os.lstat(target.folder)
    except FileNotFoundError:
        if os.path.exists(target.root) and not _writable(target.root):
            raise _Problem(MemoriesError, f"{target.root} is not writable") from None
        return Planned(target, "create")
    except OSError as exc:
        raise _Problem(MemoriesError, f"cannot inspect {target.folder}: {exc.strerror}") from exc
    if stat.S_ISLNK(folder.st_mode):
        raise _Problem(ConflictError, f"{target.folder} is a link; refusing to follow it")
    if not stat.S_ISDIR(folder.st_mode):
        raise _Problem(ConflictError, f"{target.folder} is not a folder")
    try:
        file = os.lstat(target.file)
    except FileNotFoundError:
        file = None
    except OSError as exc:
        raise _Problem(MemoriesError, f"cannot inspect {target.file}: {exc.strerror}") from exc
    if file is not None:
        if stat.S_ISLNK(file.st_mode):
            raise _Problem(ConflictError, f"{target.file} is a link; refusing to follow it")
        if not stat.S_ISREG(file.st_mode):
            raise _Problem(ConflictError, f"{target.file} is not a regular file")
        try:
            current = _read_file(target.file)
        except OSError as exc:
            raise _Problem(MemoriesError, f"cannot read {target.file}: {exc.strerror}") from exc
        if current == skill.data:
            return Planned(target, "unchanged")
        if not force:
            raise _Problem(
                ConflictError,
                f"{target.file} differs from the skill this release ships; "
                "pass --force to replace it",
            )
    if not _writable(target.folder):
        raise _Problem(MemoriesError, f"{target.folder} is not writable")
    return Planned(target, "create" if file is None else "replace")


def plan(
    targets: Sequence[Target], *, force: bool = False, skill: Skill | None = None
) -> list[Planned]:
    """Check every target and decide what to do with it, writing nothing.

    Targets naming the same file are planned once.

    Raises:
        ConflictError: something is in the way of at least one target (a link below the skills
            root, a file where a folder belongs, a differing file without ``force``); the
            message lists every problem found.
        MemoriesError: a target folder is not writable or cannot be inspected.
    """
    skill = skill or bundled_skill()
    seen: set[Path] = set()
    planned: list[Planned] = []
    problems: list[_Problem] = []
    for target in targets:
        if target.file in seen:
            continue
        seen.add(target.file)
        try:
            planned.append(_preflight(target, skill, force=force))
        except _Problem as problem:
            problems.append(problem)
    _raise_all(problems, "nothing was installed: ")
    return planned


# -- stage and publish ------------------------------------------------------------------------


@dataclass
class _Staged:
    planned: Planned
    created: list[Path] = field(default_factory=list)  # folders made for it, outermost first
    root_fd: int = -1
    folder_fd: int = -1
    temp: str | None = None

    def close(self) -> None:
        for fd in (self.folder_fd, self.root_fd):
            if fd >= 0:
                os.close(fd)
        self.folder_fd = self.root_fd = -1

    def discard(self) -> None:
        """Remove what staging made (never raises: it runs while another error is raised)."""
        if self.temp is not None and self.folder_fd >= 0:
            # Already gone means nothing of ours is left.
            with contextlib.suppress(OSError):
                os.unlink(self.temp, dir_fd=self.folder_fd)
        self.close()
        for path in reversed(self.created):
            try:
                os.rmdir(path)
            except OSError:
                break  # someone else put something there: it is theirs now


def _make_dirs(root: Path, created: list[Path]) -> None:
    missing: list[Path] = []
    path = root
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            continue  # made concurrently; the open below checks what it is
        created.append(path)
        _sync_dir(path.parent)


def _sync_dir(path: Path | None = None, *, fd: int | None = None) -> None:
    if fd is not None:
        os.fsync(fd)
        return
    assert path is not None
    handle = os.open(path, _DIR_FLAGS)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _stage(planned: Planned, skill: Skill) -> _Staged:
    staged = _Staged(planned)
    target = planned.target
    try:
        _make_dirs(target.root, staged.created)
        staged.root_fd = os.open(target.root, _DIR_FLAGS)
        try:
            os.mkdir(SKILL_NAME, 0o755, dir_fd=staged.root_fd)
            staged.created.append(target.folder)
            _sync_dir(fd=staged.root_fd)
        except FileExistsError:
            pass
        try:
            staged.folder_fd = os.open(
                SKILL_NAME, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=staged.root_fd
            )
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Problem(ConflictError, f"{target.folder} is a link or not a folder") from exc
            raise
        name = f".{SKILL_FILE}.{secrets.token_hex(8)}.tmp"
        fd = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=staged.folder_fd,
        )
        staged.temp = name
        try:
            view = memoryview(skill.data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except _Problem:
        staged.discard()
        raise
    except OSError as exc:
        staged.discard()
        raise _Problem(MemoriesError, f"cannot write in {target.folder}: {exc.strerror}") from exc
    return staged


def _publish_new(staged: _Staged, skill: Skill) -> Result:
    assert staged.temp is not None
    fd = staged.folder_fd
    try:
        os.link(staged.temp, SKILL_FILE, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    except FileExistsError:
        return _existing(staged, skill)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        # A file system without hard links: create the name exclusively and fill it. Still
        # never clobbers, though a reader may briefly see a short file.
        try:
            out = os.open(
                SKILL_FILE,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=fd,
            )
        except FileExistsError:
            return _existing(staged, skill)
        try:
            view = memoryview(skill.data)
            while view:
                view = view[os.write(out, view) :]
            os.fsync(out)
        finally:
            os.close(out)
    return "created"


def _existing(staged: _Staged, skill: Skill) -> Result:
    """A ``SKILL.md`` appeared after the preflight: same skill, or someone else's file."""
    target = staged.planned.target
    try:
        current = _read_file(Path(SKILL_FILE), dir_fd=staged.folder_fd)
    except OSError as exc:
        raise _Problem(ConflictError, f"{target.file} appeared meanwhile and is kept") from exc
    if current == skill.data:
        return "unchanged"
    raise _Problem(ConflictError, f"{target.file} was created by someone else meanwhile; kept it")


def _publish(staged: _Staged, skill: Skill) -> Outcome:
    target = staged.planned.target
    fd = staged.folder_fd
    try:
        try:
            if staged.planned.action == "replace":
                assert staged.temp is not None
                os.replace(staged.temp, SKILL_FILE, src_dir_fd=fd, dst_dir_fd=fd)
                staged.temp = None
                result: Result = "replaced"
            else:
                result = _publish_new(staged, skill)
        except OSError as exc:
            raise _Problem(MemoriesError, f"cannot write {target.file}: {exc.strerror}") from exc
        if staged.temp is not None:
            os.unlink(staged.temp, dir_fd=fd)
            staged.temp = None
        _sync_dir(fd=fd)
    finally:
        if staged.temp is not None:
            staged.discard()
        staged.close()
    return Outcome(target, result)


def install(
    targets: Sequence[Target],
    *,
    force: bool = False,
    skill: Skill | None = None,
    on_staged: Callable[[], None] | None = None,
) -> list[Outcome]:
    """Install ``skill`` (default: the bundled one) at every target.

    ``on_staged`` runs once every file is staged and before any is published; tests use it to
    race a concurrent writer.

    Raises:
        ConflictError: the preflight found something in the way (nothing written), a link
            appeared below a root, or a different ``SKILL.md`` was created by someone else
            while this ran (that file is kept; the other targets are still installed).
        MemoriesError: a folder cannot be written (nothing is left behind when this happens
            while staging).
    """
    skill = skill or bundled_skill()
    planned = plan(targets, force=force, skill=skill)
    staged: list[_Staged] = []
    try:
        for item in planned:
            if item.action != "unchanged":
                staged.append(_stage(item, skill))
    except _Problem as problem:
        for done in staged:
            done.discard()
        _raise_all([problem], "nothing was installed: ")
    if on_staged is not None:
        on_staged()
    outcomes = {item.target.file: Outcome(item.target, "unchanged") for item in planned}
    problems: list[_Problem] = []
    for ready in staged:
        try:
            outcomes[ready.planned.target.file] = _publish(ready, skill)
        except _Problem as problem:
            outcomes.pop(ready.planned.target.file)
            problems.append(problem)
    _raise_all(problems, "not every skill was installed: ")
    return [outcomes[item.target.file] for item in planned if item.target.file in outcomes]
