"""The git collector: one ``commit`` event per new commit in the repositories you name.

Repositories come from ``repo_roots`` (config or ``URCHIN_REPO_ROOTS``; each entry is
a repository or a folder whose immediate children are repositories) plus any
passed explicitly. The first run over a repository is silent: it records where
every local branch (and a detached HEAD) points and emits nothing.

Later runs list commits reachable from the current tips but not from what was
recorded. For each ref the checkpoint keeps the tip and a few first-parent
ancestors (``tip~1, ~2, ~4 … ~128``) as exclusion anchors, so a rebase or a
force-push whose old tip was garbage-collected still has a surviving ancestor to
stop at: only the rewritten commits (which have new SHAs) are new. If none of a
ref's anchors survive, the walk falls back to ``--since`` the old tip's committer
date minus an hour. Commits committed before the first run's tips never count
(so checking out an old branch does not flood the journal), and a bounded set of
SHAs already emitted stops any re-walk from repeating one. A checkpoint SHA that
vanished is never handed to git, so a repository cannot get stuck.

Event ids are ``stable_id("git", sha)``; a re-walk or a crash before the checkpoint
is saved therefore never duplicates a commit. Merge commits are skipped unless
asked for, as urchin always did.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urchin.collectors.base import Collector, CollectorRun, stable_id
from urchin.config import Settings
from urchin.event import Event, EventKind

__all__ = ["Commit", "GitCollector", "GitError", "discover_repos", "is_repo"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
#: How many emitted SHAs each repository remembers.
SEEN_LIMIT = 2000
#: First-parent depths kept as exclusion anchors for each ref.
ANCHOR_DEPTHS = (0, 1, 2, 4, 8, 16, 32, 64, 128)
#: Slack before a vanished tip's committer date when falling back to --since.
SINCE_SLACK_SECONDS = 3600
# Field order of the log format; fields and records are NUL-separated, since a
# message may contain any other byte (tabs, newlines, unit separators).
_FIELDS = ("%H", "%P", "%an", "%ae", "%aI", "%cI", "%s", "%B", "%S")
_FORMAT = "%x00".join(_FIELDS)
# Variables that would point git somewhere other than the repository we pass with -C.
_REPO_OVERRIDES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


class GitError(Exception):
    """A git command failed, timed out, or printed something we cannot read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit as ``git log`` printed it."""

    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    authored: datetime
    committed: datetime
    subject: str
    message: str
    source: str


def is_repo(path: Path) -> bool:
    """Whether ``path`` is a work tree (``.git`` folder or file) or a bare repository."""
    try:
        if (path / ".git").exists():
            return True
        return (
            (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()
        )
    except OSError:
        return False


def discover_repos(
    roots: Iterable[Path], explicit: Iterable[Path] = ()
) -> tuple[list[Path], list[str]]:
    """Repositories under ``roots`` (each a repo or a folder of repos) plus ``explicit`` ones.

    Missing roots are ignored (nothing to collect there); explicit paths that are
    not repositories, and roots that cannot be listed, come back as problems.
    """
    found: list[Path] = []
    problems: list[str] = []
    for root in roots:
        if is_repo(root):
            found.append(root)
            continue
        try:
            children = sorted(child for child in root.iterdir() if child.is_dir())
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue
        except OSError as exc:
            problems.append(f"cannot list repo root {root}: {exc.strerror}")
            continue
        found.extend(child for child in children if is_repo(child))
    for repo in explicit:
        if is_repo(repo):
            found.append(repo)
        else:
            problems.append(f"{repo} is not a git repository")
    unique: dict[str, Path] = {}
    for repo in found:
        resolved = repo.resolve()
        unique.setdefault(str(resolved), resolved)
    return list(unique.values()), problems


class GitCollector(Collector):
    """Commits from the configured repositories."""

    name = "git"

    def __init__(
        self,
        roots: Iterable[Path] = (),
        repos: Iterable[Path] = (),
        *,
        git: str = "git",
        timeout: float = DEFAULT_TIMEOUT,
        include_merges: bool = False,
    ) -> None:
        self.roots = tuple(Path(root) for root in roots)
        self.repos = tuple(Path(repo) for repo in repos)
        self.git = git
        self.timeout = timeout
        self.include_merges = include_merges

    @classmethod
    def from_settings(cls, settings: Settings, repos: Iterable[Path] = ()) -> GitCollector:
        """The collector for ``settings.repo_roots`` plus explicit ``repos`` (``--repo``)."""
        return cls(settings.repo_roots, repos)

    def _binary(self) -> str | None:
        return shutil.which(self.git)

    def available(self) -> bool:
        if self._binary() is None:
            return False
        return bool(self.repos) or bool(discover_repos(self.roots)[0])

    def collect(self, run: CollectorRun) -> None:
        """Emit new commits of every repository; a failing repository is reported and kept.

        Raises:
            JournalWriteError: the journal could not be written.
            UrchinError: the checkpoint could not be saved.
        """
        binary = self._binary()
        if binary is None:
            run.error(f"{self.git} is not installed")
            return
        repos, problems = discover_repos(self.roots, self.repos)
        for problem in problems:
            run.error(problem)
        saved = run.state.get("repos")
        saved = dict(saved) if isinstance(saved, dict) else {}
        states = dict(saved)
        for repo in repos:
            key = str(repo)
            previous = saved.get(key)
            reader = _Repo(binary, repo, self.timeout)
            try:
                state, commits = self._collect_repo(
                    reader, previous if isinstance(previous, dict) else None
                )
            except GitError as exc:
                run.error(f"{key}: {exc.message}")
                continue
            events = [_event(commit, key, reader.branch_of(commit.source)) for commit in commits]
            run.emit(events)
            run.skip(reader.duplicates)
            states[key] = state
        if states != saved:
            run.save({**run.state, "repos": states})

    def _collect_repo(
        self, reader: _Repo, previous: dict[str, Any] | None
    ) -> tuple[dict[str, Any], list[Commit]]:
        tips = reader.tips()
        if previous is None or not isinstance(previous.get("refs"), dict):
            # No usable record of this repository: start silently, as on a first run.
            times = reader.commit_times(list(tips.values()))
            refs = {ref: reader.ref_state(sha, times.get(sha)) for ref, sha in tips.items()}
            baseline = max(times.values(), default=None)
            return _repo_state(refs, [], baseline), []
        old_refs = _old_refs(previous.get("refs"))
        raw_seen = previous.get("seen")
        seen_list = [s for s in raw_seen if _is_sha(s)] if isinstance(raw_seen, list) else []
        baseline = previous.get("baseline")
        baseline = baseline if isinstance(baseline, int) else None
        if {ref: info["tip"] for ref, info in old_refs.items()} == tips:
            return previous, []
        anchors = {sha for info in old_refs.values() for sha in info["anchors"]}
        alive = reader.existing(anchors)
        lost = [
            info["time"]
            for info in old_refs.values()
            if isinstance(info["time"], int) and not alive.intersection(info["anchors"])
        ]
        since = _later(baseline, min(lost) - SINCE_SLACK_SECONDS if lost else None)
        new_tips = [sha for sha in dict.fromkeys(tips.values()) if sha not in alive]
        commits: list[Commit] = []
        if new_tips:
            try:
                commits = reader.log(new_tips, sorted(alive), since, self.include_merges)
            except GitError as exc:
                # Never stay stuck on exclusions git refuses: walk by date alone.
                log.warning("git log with exclusions failed in %s: %s", reader.path, exc.message)
                fallback = [i["time"] for i in old_refs.values() if isinstance(i["time"], int)]
                since = _later(baseline, min(fallback) - SINCE_SLACK_SECONDS if fallback else None)
                commits = reader.log(new_tips, [], since, self.include_merges)
        seen = set(seen_list)
        fresh = []
        for commit in commits:
            if commit.sha in seen:
                reader.duplicates += 1
                continue
            seen.add(commit.sha)
            seen_list.append(commit.sha)
            fresh.append(commit)
        times = reader.commit_times(
            [sha for ref, sha in tips.items() if old_refs.get(ref, {}).get("tip") != sha]
        )
        refs = {}
        for ref, sha in tips.items():
            old = old_refs.get(ref)
            refs[ref] = old if old and old["tip"] == sha else reader.ref_state(sha, times.get(sha))
        return _repo_state(refs, seen_list[-SEEN_LIMIT:], baseline), fresh


def _later(first: int | None, second: int | None) -> int | None:
    if first is None:
        return second
    if second is None:
        return first
    return max(first, second)


def _repo_state(
    refs: Mapping[str, dict[str, Any]], seen: Sequence[str], baseline: int | None
) -> dict[str, Any]:
    state: dict[str, Any] = {"refs": dict(refs), "seen": list(seen)}
    if baseline is not None:
        state["baseline"] = baseline
    return state


def _old_refs(value: object) -> dict[str, dict[str, Any]]:
    """Saved refs, keeping only well-formed entries."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(value, dict):
        return out
    for ref, info in value.items():
        if not isinstance(info, dict) or not _is_sha(info.get("tip")):
            continue
        anchors = [a for a in info.get("anchors", []) if _is_sha(a)] or [info["tip"]]
        when = info.get("time")
        out[str(ref)] = {
            "tip": info["tip"],
            "anchors": anchors,
            "time": when if isinstance(when, int) else None,
        }
    return out


def _is_sha(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) in (40, 64)
        and all(c in "0123456789abcdef" for c in value)
    )


def _event(commit: Commit, workspace: str, branch: str | None) -> Event:
    return Event.create(
        commit.message or commit.subject or commit.sha,
        "git",
        EventKind.COMMIT,
        timestamp=commit.authored,
        event_id=stable_id("git", commit.sha),
        workspace=workspace,
        session=branch,
        title=commit.subject or None,
    )


class _Repo:
    """git plumbing over one repository, run without a shell and with a timeout."""

    def __init__(self, binary: str, path: Path, timeout: float) -> None:
        self.binary = binary
        self.path = path
        self.timeout = timeout
        self.duplicates = 0
        self._ref_of_sha: dict[str, str] = {}

    def run(self, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
        """Run git; return stdout.

        Raises:
            GitError: git is missing, timed out, or exited with a code outside ``ok``.
        """
        env = {k: v for k, v in os.environ.items() if k not in _REPO_OVERRIDES}
        env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
        try:
            proc = subprocess.run(
                [self.binary, "-C", str(self.path), *args],
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                env=env,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise GitError("git is not installed") from None
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} timed out after {self.timeout:g}s") from None
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror}") from exc
        if proc.returncode not in ok:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = detail[0][:200] if detail else f"exit status {proc.returncode}"
            raise GitError(f"git {args[0]} failed: {reason}")
        return proc.stdout

    def tips(self) -> dict[str, str]:
        """Local branch tips, plus ``HEAD`` when it is detached; empty for an empty repo."""
        out = self.run(
            "for-each-ref", "--format=%(objecttype) %(objectname) %(refname)", "refs/heads/"
        )
        tips: dict[str, str] = {}
        for line in out.decode("utf-8", "replace").splitlines():
            kind, _, rest = line.partition(" ")
            sha, _, ref = rest.partition(" ")
            if kind == "commit" and _is_sha(sha):
                tips[ref] = sha
        head = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", ok=(0, 1)).strip()
        head_sha = head.decode("ascii", "replace")
        if _is_sha(head_sha) and head_sha not in tips.values():
            tips["HEAD"] = head_sha
        self._ref_of_sha = {}
        for ref, sha in tips.items():
            self._ref_of_sha.setdefault(sha, ref)
        return tips

    def branch_of(self, source: str) -> str | None:
        """The branch a commit was reached from (``%S`` gives the tip SHA we passed)."""
        ref = self._ref_of_sha.get(source.strip(), "")
        return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None

    def commit_times(self, shas: Sequence[str]) -> dict[str, int]:
        """Committer time (epoch seconds) of each commit."""
        if not shas:
            return {}
        out = self.run("log", "--no-walk=unsorted", "--no-show-signature", "--format=%H %ct", *shas)
        times: dict[str, int] = {}
        for line in out.decode("ascii", "replace").splitlines():
            sha, _, when = line.partition(" ")
            if when.strip().lstrip("-").isdigit():
                times[sha] = int(when)
        return times

    def ref_state(self, tip: str, when: int | None) -> dict[str, Any]:
        """The checkpoint of one ref: tip, committer time and first-parent anchors."""
        out = self.run(
            "rev-list", "--first-parent", f"--max-count={ANCHOR_DEPTHS[-1] + 1}", tip, "--"
        )
        chain = [line for line in out.decode("ascii", "replace").split() if _is_sha(line)]
        anchors = [chain[depth] for depth in ANCHOR_DEPTHS if depth < len(chain)] or [tip]
        return {"tip": tip, "anchors": anchors, "time": when}

    def existing(self, shas: Iterable[str]) -> set[str]:
        """Which of ``shas`` are still commits in the object store."""
        wanted = sorted(set(shas))
        if not wanted:
            return set()
        query = "".join(f"{sha}^{{commit}}\n" for sha in wanted).encode("ascii")
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=query)
        alive: set[str] = set()
        for line in out.decode("ascii", "replace").splitlines():
            sha, _, kind = line.partition(" ")
            if kind.strip() == "commit":
                alive.add(sha)
        return alive

    def log(
        self,
        tips: Sequence[str],
        exclude: Sequence[str],
        since: int | None,
        include_merges: bool,
    ) -> list[Commit]:
        """Commits reachable from ``tips`` but not ``exclude``, oldest first."""
        args = ["log", "--reverse", "-z", "--source", "--no-color", "--no-show-signature"]
        args.append(f"--format={_FORMAT}")
        if not include_merges:
            args.append("--no-merges")
        if since is not None:
            args.append(f"--since={datetime.fromtimestamp(since, UTC).isoformat()}")
        args.extend(tips)
        if exclude:
            args.append("--not")
            args.extend(exclude)
        args.append("--")
        return _parse_log(self.run(*args))


def _parse_log(out: bytes) -> list[Commit]:
    """Split ``git log -z`` output of :data:`_FORMAT` into commits.

    Raises:
        GitError: the output does not have whole records.
    """
    if not out:
        return []
    tokens = out.split(b"\0")
    if tokens[-1] == b"":
        tokens.pop()
    width = len(_FIELDS)
    if len(tokens) % width:
        raise GitError("git log printed output in an unexpected shape")
    commits: list[Commit] = []
    for start in range(0, len(tokens), width):
        fields = [t.decode("utf-8", "replace") for t in tokens[start : start + width]]
        sha, parents, name, email, authored, committed, subject, body, source = fields
        sha = sha.strip()
        if not _is_sha(sha):
            raise GitError("git log printed output in an unexpected shape")
        try:
            authored_at = datetime.fromisoformat(authored.strip()).astimezone(UTC)
            committed_at = datetime.fromisoformat(committed.strip()).astimezone(UTC)
        except ValueError:
            raise GitError(f"git log printed an unreadable date for {sha[:12]}") from None
        commits.append(
            Commit(
                sha=sha,
                parents=tuple(parents.split()),
                author_name=name,
                author_email=email,
                authored=authored_at,
                committed=committed_at,
                subject=subject.strip(),
                message=body.strip(),
                source=source.strip(),
            )
        )
    return commits
