from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support import CliResult

Urchin = Callable[..., CliResult]


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.org",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def _sources(journal_path: Path) -> list[str]:
    return [json.loads(line)["source"] for line in journal_path.read_bytes().splitlines()]


def test_collect_all_reads_each_source_once(
    urchin: Urchin, isolated_home: Path, journal_path: Path
) -> None:
    repo = isolated_home / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    (isolated_home / ".bash_history").write_text("#1700000000\nls -la\n", encoding="utf-8")
    local = isolated_home / ".local" / "share" / "urchin" / "local-model.jsonl"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text('{"prompt": "explain lifetimes", "model": "llama3"}\n', encoding="utf-8")

    first = urchin("collect", "--repo", str(repo), "--json")
    assert first.code == 0, first.stderr
    by_name = {c["name"]: c for c in first.json()["collectors"]}
    assert by_name["shell"]["new"] == 1
    assert by_name["local-model"]["new"] == 1
    assert by_name["git"]["new"] == 0  # the first run only records where branches point
    assert by_name["claude"]["available"] is False

    _git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    second = urchin("collect", "all", "--repo", str(repo), "--json")
    assert second.json()["new"] == 1
    assert sorted(_sources(journal_path)) == ["git", "local-model", "shell"]

    again = urchin("collect", "--repo", str(repo))
    assert again.code == 0
    assert "git" in again.stdout
    assert len(_sources(journal_path)) == 3  # nothing twice


def test_collect_named_sources_only(urchin: Urchin, isolated_home: Path) -> None:
    (isolated_home / ".bash_history").write_text("echo hi\n", encoding="utf-8")
    result = urchin("collect", "local-model", "--json")
    assert [c["name"] for c in result.json()["collectors"]] == ["local-model"]


def test_unknown_collector_is_a_usage_error(urchin: Urchin, journal_path: Path) -> None:
    result = urchin("collect", "myspace")
    assert result.code == 2
    assert "unknown collector 'myspace'" in result.stderr
    assert not journal_path.exists()


def test_one_broken_collector_does_not_stop_the_others(
    urchin: Urchin, isolated_home: Path, journal_path: Path
) -> None:
    (isolated_home / ".bash_history").write_text("echo hi\n", encoding="utf-8")
    local = isolated_home / ".local" / "share" / "urchin" / "local-model.jsonl"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text('{"prompt": "hello"}\n', encoding="utf-8")
    checkpoints = isolated_home / ".local" / "share" / "urchin" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "shell.json").write_text("{not json", encoding="utf-8")

    result = urchin("collect", "--json")
    assert result.code == 1
    by_name = {c["name"]: c for c in result.json()["collectors"]}
    assert by_name["shell"]["errors"]
    assert "corrupt" in by_name["shell"]["errors"][0]
    assert by_name["local-model"]["new"] == 1
    assert _sources(journal_path) == ["local-model"]
