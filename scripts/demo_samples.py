"""Sample data for the demo: the bundled sample home, its SQLite databases, a git repo.

`install_sample_home` copies ``examples/sample-home/`` into the demo's throwaway home,
filling in the two placeholders the samples hold, and builds the SQLite databases the
agents keep from the SQL text next to them (binary databases are not committed).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

SAMPLE_HOME = Path(__file__).resolve().parent.parent / "examples" / "sample-home"
#: SQL text in the sample folder → the database it becomes, relative to the home.
DATABASES = {
    "codex-state.sql": Path(".codex/state_5.sqlite"),
    "opencode.sql": Path(".local/share/opencode/opencode.db"),
}
# Files at the top of the sample folder that describe it rather than belong in a home.
_NOT_COPIED = frozenset({"README.md", *DATABASES})
_HOME_MARK = "{{HOME}}"
_GH_MARK = "{{FAKE_GITHUB_TOKEN}}"
GIT_TIMEOUT = 30


def fake_github_token() -> str:
    """A made-up token in GitHub's personal-token shape, built here so no file holds one."""
    prefix = "".join(("g", "h", "p", "_"))
    return prefix + "DemoOnly" + "0123456789" * 2 + "abcdefgh"


def _fill(text: str, home: Path) -> str:
    return text.replace(_HOME_MARK, str(home)).replace(_GH_MARK, fake_github_token())


def install_sample_home(home: Path, sample: Path = SAMPLE_HOME) -> list[Path]:
    """Copy the sample files into ``home`` and build the databases; returns what was made.

    Raises:
        FileNotFoundError: the sample folder is missing.
        sqlite3.Error: a SQL file does not run.
    """
    if not sample.is_dir():
        raise FileNotFoundError(f"sample home not found: {sample}")
    made: list[Path] = []
    for source in sorted(p for p in sample.rglob("*") if p.is_file()):
        relative = source.relative_to(sample)
        if str(relative) in _NOT_COPIED:
            continue
        target = home / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        if _HOME_MARK in text or _GH_MARK in text:
            target.write_text(_fill(text, home), encoding="utf-8")
            shutil.copystat(source, target)
        else:
            shutil.copy2(source, target)
        made.append(relative)
    for sql_name, relative in DATABASES.items():
        script = _fill((sample / sql_name).read_text(encoding="utf-8"), home)
        build_database(script, home / relative)
        made.append(relative)
    return made


def build_database(script: str, target: Path) -> None:
    """Create ``target`` (replacing any old file) by running the SQL ``script``.

    Raises:
        sqlite3.Error: the script does not run.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    conn = sqlite3.connect(target)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and no user or system config.

    Raises:
        subprocess.CalledProcessError: git failed.
        subprocess.TimeoutExpired: git took longer than GIT_TIMEOUT seconds.
    """
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Demo Developer",
        "GIT_AUTHOR_EMAIL": "demo@example.org",
        "GIT_COMMITTER_NAME": "Demo Developer",
        "GIT_COMMITTER_EMAIL": "demo@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        check=True,
    )
    return proc.stdout


def commit_file(repo: Path, name: str, text: str, message: str) -> None:
    """Write ``name`` in ``repo`` and commit it with ``message``.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)


def make_repo(repo: Path) -> None:
    """A small repository with two commits on ``main``.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    commit_file(repo, "README.md", "# webshop\n", "Initial commit")
    commit_file(
        repo,
        "shop/cart.py",
        "def total(items):\n    return sum(i.price for i in sorted(items, key=lambda i: i.sku))\n",
        "Sort cart items before applying coupons",
    )
