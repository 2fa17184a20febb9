"""The git collector against real repositories built with the git binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.urchin.collectors.support import journal_events, run_once
from urchin.collectors.base import CheckpointStore, CollectResult, stable_id
from urchin.collectors.git import GitCollector, discover_repos
from urchin.config import load_settings
from urchin.errors import UrchinError
from urchin.event import Event, EventKind

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true", reason="git is not installed"
)

BASE_TIME = 1_700_000_000
BODY_WITH_TAB = "Parse the config\n\nFirst line of the body.\n\tindented\twith tabs\nlast line"


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ada Lovelace")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ada@example.test")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def data_dir(isolated_home: Path) -> Path:
    return isolated_home / ".local" / "share" / "urchin"


class Repo:
    """A throwaway repository with commits at controlled times."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = BASE_TIME

    def git(self, *args: str, stdin: str | None = None, when: int | None = None) -> str:
        env = dict(os.environ)
        if when is not None:
            stamp = f"@{when} +0000"
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def commit(self, message: str) -> str:
        self.clock += 60
        self.git("commit", "-q", "--allow-empty", "-F", "-", stdin=message, when=self.clock)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def exists(self, sha: str) -> bool:
        proc = subprocess.run(
            ["git", "-C", str(self.path), "cat-file", "-e", f"{sha}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        return proc.returncode == 0

    def forget_unreachable(self) -> None:
        self.git("reflog", "expire", "--expire=now", "--all")
        self.git("gc", "-q", "--prune=now")


def make_repo(path: Path, commits: int = 3) -> Repo:
    path.mkdir(parents=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    messages = ["Initial commit", BODY_WITH_TAB, "Add tests"]
    for index in range(commits):
        repo.commit(messages[index % len(messages)])
    return repo


def collect(collector: GitCollector, data_dir: Path, store: CheckpointStore | None = None) -> Any:
    return run_once(collector, data_dir, store)


def events(data_dir: Path) -> list[Event]:
    return journal_events(data_dir)


def titles(data_dir: Path) -> list[str | None]:
    return [event.title for event in events(data_dir)]


def checkpoint(data_dir: Path) -> dict[str, Any]:
    text = CheckpointStore(data_dir).path("git").read_text(encoding="utf-8")
    state: dict[str, Any] = json.loads(text)
    return state


def test_first_run_is_silent_and_records_the_tip(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")

    result = collect(GitCollector(repos=[repo.path]), data_dir)

    assert (result.available, result.new, result.errors) == (True, 0, [])
    assert events(data_dir) == []
    refs = checkpoint(data_dir)["repos"][str(repo.path.resolve())]["refs"]
    assert refs["refs/heads/main"]["tip"] == repo.head()


def test_new_commits_become_events_once(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app", commits=1)
    collect(GitCollector(repos=[repo.path]), data_dir)
    sha = repo.commit(BODY_WITH_TAB)
    second = repo.commit("Fix typo")

    result = collect(GitCollector(repos=[repo.path]), data_dir)

    assert result.new == 2
    first_event, second_event = events(data_dir)
    assert first_event.id == stable_id("git", sha)
    assert first_event.source == "git" and first_event.kind is EventKind.COMMIT
    assert first_event.title == "Parse the config"
    assert first_event.content == BODY_WITH_TAB
    assert first_event.workspace == str(repo.path.resolve())
    assert first_event.session == "main"
    assert first_event.timestamp == datetime.fromtimestamp(repo.clock - 60, UTC)
    assert second_event.id == stable_id("git", second)
    assert collect(GitCollector(repos=[repo.path]), data_dir).new == 0
    assert len(events(data_dir)) == 2


def test_force_push_with_garbage_collected_tip_emits_only_rewritten_commits(
    tmp_path: Path, data_dir: Path
) -> None:
    repo = make_repo(tmp_path / "app")
    old_tip = repo.head()
    collect(GitCollector(repos=[repo.path]), data_dir)

    # Drop the last commit and amend the one before it: a rebase-and-force-push.
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.clock += 60
    repo.git("commit", "-q", "--amend", "--no-edit", "--allow-empty", when=repo.clock)
    amended = repo.head()
    newest = repo.commit("Add the feature again")
    repo.forget_unreachable()
    assert not repo.exists(old_tip)

    result = collect(GitCollector(repos=[repo.path]), data_dir)

    assert result.errors == []
    got = events(data_dir)
    assert [e.id for e in got] == [stable_id("git", amended), stable_id("git", newest)]
    assert got[0].content == BODY_WITH_TAB
    refs = checkpoint(data_dir)["repos"][str(repo.path.resolve())]["refs"]
    assert refs["refs/heads/main"]["tip"] == newest
    assert collect(GitCollector(repos=[repo.path]), data_dir).new == 0


def test_rewritten_history_without_gc_emits_only_the_new_side(
    tmp_path: Path, data_dir: Path
) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.git("reset", "-q", "--hard", "HEAD~1")
    replacement = repo.commit("Add tests, properly")

    collect(GitCollector(repos=[repo.path]), data_dir)

    assert [e.id for e in events(data_dir)] == [stable_id("git", replacement)]


def test_history_replaced_entirely_is_never_stuck(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.git("checkout", "-q", "--orphan", "fresh")
    fresh = repo.commit("Squashed history")
    repo.git("branch", "-q", "-D", "main")
    repo.git("branch", "-q", "-m", "main")
    repo.forget_unreachable()

    first = collect(GitCollector(repos=[repo.path]), data_dir)
    later = repo.commit("After the squash")
    second = collect(GitCollector(repos=[repo.path]), data_dir)

    assert first.errors == [] and second.errors == []
    assert [e.id for e in events(data_dir)] == [
        stable_id("git", fresh),
        stable_id("git", later),
    ]


def test_new_branch_and_detached_head(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.git("checkout", "-q", "-b", "feature/x")
    repo.commit("Work on x")
    repo.git("checkout", "-q", "--detach", "main")
    repo.commit("Experiment")

    collect(GitCollector(repos=[repo.path]), data_dir)

    sessions = {e.title: e.session for e in events(data_dir)}
    assert sessions == {"Work on x": "feature/x", "Experiment": None}


def test_merge_commits_are_skipped_but_merged_work_is_not(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit("Topic work")
    repo.git("checkout", "-q", "main")
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "-m", "Merge topic", "topic", when=repo.clock)
    repo.git("branch", "-q", "-D", "topic")

    collect(GitCollector(repos=[repo.path]), data_dir)

    assert titles(data_dir) == ["Topic work"]


def test_empty_repository_is_silent_then_collects_its_first_commit(
    tmp_path: Path, data_dir: Path
) -> None:
    repo = make_repo(tmp_path / "empty", commits=0)

    assert collect(GitCollector(repos=[repo.path]), data_dir).errors == []
    repo.commit("First!")
    result = collect(GitCollector(repos=[repo.path]), data_dir)

    assert result.errors == []
    assert titles(data_dir) == ["First!"]


def test_shallow_clone_collects_only_new_work(tmp_path: Path, data_dir: Path) -> None:
    upstream = make_repo(tmp_path / "upstream")
    clone = Repo(tmp_path / "clone")
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{upstream.path}", str(clone.path)],
        check=True,
        capture_output=True,
    )
    clone.clock = upstream.clock
    collect(GitCollector(repos=[clone.path]), data_dir)
    clone.git("fetch", "-q", "--unshallow")
    clone.commit("Local change")

    result = collect(GitCollector(repos=[clone.path]), data_dir)

    assert result.errors == []
    assert titles(data_dir) == ["Local change"]


def test_repo_roots_from_settings_find_child_repositories(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_repo(tmp_path / "code" / "one", commits=1)
    second = make_repo(tmp_path / "code" / "two", commits=1)
    (tmp_path / "code" / "notes").mkdir()
    single = make_repo(tmp_path / "elsewhere", commits=1)
    monkeypatch.setenv("URCHIN_REPO_ROOTS", f"{tmp_path / 'code'}:{single.path}:/nonexistent")

    collector = GitCollector.from_settings(load_settings())
    found, problems = discover_repos(collector.roots)
    assert found == [first.path.resolve(), second.path.resolve(), single.path.resolve()]
    assert problems == []

    collect(collector, data_dir)
    first.commit("One")
    second.commit("Two")
    collect(collector, data_dir)
    assert sorted(t or "" for t in titles(data_dir)) == ["One", "Two"]


def test_explicit_path_that_is_not_a_repo_is_reported(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app", commits=1)
    (tmp_path / "plain").mkdir()

    result = collect(GitCollector(repos=[repo.path, tmp_path / "plain"]), data_dir)

    assert result.errors == [f"{tmp_path / 'plain'} is not a git repository"]
    assert str(repo.path.resolve()) in checkpoint(data_dir)["repos"]


def test_missing_git_binary_makes_the_collector_unavailable(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app", commits=1)

    result = collect(GitCollector(repos=[repo.path], git="git-not-installed-here"), data_dir)

    assert result.available is False and result.errors == []


def test_no_repositories_means_unavailable(tmp_path: Path, data_dir: Path) -> None:
    result = collect(GitCollector(roots=[tmp_path / "missing"]), data_dir)

    assert result.available is False


def test_broken_repository_does_not_stop_the_others(tmp_path: Path, data_dir: Path) -> None:
    good = make_repo(tmp_path / "good", commits=1)
    bad = make_repo(tmp_path / "bad", commits=1)
    collector = GitCollector(repos=[good.path, bad.path])
    collect(collector, data_dir)
    bad_state = checkpoint(data_dir)["repos"][str(bad.path.resolve())]
    good.commit("Still collected")
    bad.commit("Lost to corruption")
    (bad.path / ".git" / "HEAD").write_text("garbage\n", encoding="utf-8")

    result = collect(collector, data_dir)

    assert len(result.errors) == 1 and str(bad.path.resolve()) in result.errors[0]
    assert titles(data_dir) == ["Still collected"]
    assert checkpoint(data_dir)["repos"][str(bad.path.resolve())] == bad_state


def test_crash_between_append_and_checkpoint_duplicates_nothing(
    tmp_path: Path, data_dir: Path
) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.commit("Before the crash")

    class DiskFull(CheckpointStore):
        def save(self, name: str, state: dict[str, Any]) -> None:
            raise UrchinError("cannot write checkpoint: No space left on device")

    crashed: CollectResult = collect(GitCollector(repos=[repo.path]), data_dir, DiskFull(data_dir))
    assert crashed.new == 1 and crashed.errors
    repo.commit("After the crash")

    recovered = collect(GitCollector(repos=[repo.path]), data_dir)

    assert recovered.errors == [] and recovered.new == 1
    assert titles(data_dir) == ["Before the crash", "After the crash"]


def test_restored_older_checkpoint_duplicates_nothing(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")
    collect(GitCollector(repos=[repo.path]), data_dir)
    path = CheckpointStore(data_dir).path("git")
    older = path.read_bytes()
    repo.commit("Once")
    collect(GitCollector(repos=[repo.path]), data_dir)

    path.write_bytes(older)
    result = collect(GitCollector(repos=[repo.path]), data_dir)

    assert result.new == 0
    assert titles(data_dir) == ["Once"]


def test_inherited_git_dir_does_not_redirect_the_collector(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "app", commits=1)
    other = make_repo(tmp_path / "other", commits=1)
    collect(GitCollector(repos=[repo.path]), data_dir)
    repo.commit("Right repository")
    other.commit("Wrong repository")
    monkeypatch.setenv("GIT_DIR", str(other.path / ".git"))

    collect(GitCollector(repos=[repo.path]), data_dir)

    assert titles(data_dir) == ["Right repository"]


def test_checking_out_an_old_branch_does_not_flood_the_journal(
    tmp_path: Path, data_dir: Path
) -> None:
    upstream = make_repo(tmp_path / "upstream", commits=1)
    upstream.git("checkout", "-q", "-b", "legacy")
    upstream.commit("Ancient work")
    upstream.commit("More ancient work")
    upstream.git("checkout", "-q", "main")
    upstream.commit("Current main")
    clone = Repo(tmp_path / "clone")
    subprocess.run(
        ["git", "clone", "-q", f"file://{upstream.path}", str(clone.path)],
        check=True,
        capture_output=True,
    )
    clone.clock = upstream.clock
    collect(GitCollector(repos=[clone.path]), data_dir)

    clone.git("checkout", "-q", "legacy")
    clone.commit("Revive legacy")
    collect(GitCollector(repos=[clone.path]), data_dir)

    assert titles(data_dir) == ["Revive legacy"]
    assert events(data_dir)[0].session == "legacy"


def test_unusable_repo_checkpoint_restarts_silently(tmp_path: Path, data_dir: Path) -> None:
    repo = make_repo(tmp_path / "app")
    store = CheckpointStore(data_dir)
    store.save("git", {"repos": {str(repo.path.resolve()): {"refs": "garbage"}}})

    first = collect(GitCollector(repos=[repo.path]), data_dir)
    repo.commit("Next")
    collect(GitCollector(repos=[repo.path]), data_dir)

    assert first.errors == [] and first.new == 0
    assert titles(data_dir) == ["Next"]
