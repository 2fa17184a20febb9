"""`memories inject` through the console script: no data home, no daemon, clear errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memories.skills import SKILL_FILE, bundled_skill
from tests.support import memories_daemons, run_cli, script


def _memories(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    result = run_cli("memories", *args, input="", cwd=cwd)
    assert "Traceback" not in result.stdout + result.stderr
    return result.code, result.stdout, result.stderr


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_inject_installs_without_a_data_home_or_a_daemon(
    isolated_home: Path, tmp_path: Path
) -> None:
    code, out, err = _memories("inject", "--client", "claude-code", "--client", "codex", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["skill"] == "memories" and doc["version"] == bundled_skill().version
    assert [(t["client"], t["result"]) for t in doc["targets"]] == [
        ("claude-code", "created"),
        ("codex", "created"),
    ]
    assert (
        isolated_home / ".claude/skills/memories" / SKILL_FILE
    ).read_bytes() == bundled_skill().data
    # The data home was never made and no daemon was started.
    assert not (isolated_home / ".local/share/memories").exists()
    assert not (isolated_home / ".config/memories").exists()
    assert memories_daemons(tmp_path) == {}
    code, out, _ = _memories("inject", "--client", "claude-code")
    assert code == 0 and "unchanged" in out


def test_project_scope_writes_into_the_project_folder(isolated_home: Path) -> None:
    project = isolated_home / "shop"
    project.mkdir()
    code, out, err = _memories("inject", "--client", "opencode", "--scope", "project", cwd=project)
    assert code == 0, err
    assert "created" in out
    assert (project / ".opencode/skills/memories" / SKILL_FILE).is_file()
    code, _, err = _memories(
        "inject", "--client", "codex", "--scope", "project", "--project-dir", str(project)
    )
    assert code == 0, err
    assert (project / ".agents/skills/memories" / SKILL_FILE).is_file()


def test_dry_run_says_what_would_change_and_writes_nothing(isolated_home: Path) -> None:
    before = _tree(isolated_home)
    code, out, err = _memories("inject", "--client", "opencode", "--dry-run")
    assert code == 0, err
    assert "would create" in out
    assert _tree(isolated_home) == before


def test_errors_are_clear_with_their_exit_codes_and_write_nothing(isolated_home: Path) -> None:
    code, _, err = _memories("inject", "--client", "cursor")
    assert code == 2 and "cursor" in err
    code, out, _ = _memories("inject", "--client", "cursor", "--json")
    assert code == 2 and '"invalid_input"' in out
    code, _, err = _memories("inject", "--client", "claude-code", "--legacy-codex")
    assert code == 2 and "codex" in err
    missing = str(isolated_home / "no-such-project")
    code, _, err = _memories(
        "inject", "--client", "codex", "--scope", "project", "--project-dir", missing
    )
    assert code == 2 and "does not exist" in err

    mine = isolated_home / ".claude/skills/memories" / SKILL_FILE
    mine.parent.mkdir(parents=True)
    mine.write_text("hand edited\n", encoding="utf-8")
    before = _tree(isolated_home)
    code, out, _ = _memories("inject", "--client", "codex", "--client", "claude-code", "--json")
    assert code == 1
    assert '"conflict"' in out and "--force" in out
    assert _tree(isolated_home) == before  # Codex's folder was not created either

    (isolated_home / "x").mkdir()
    link = isolated_home / ".agents/skills/memories"
    link.parent.mkdir(parents=True)
    link.symlink_to(isolated_home / "x", target_is_directory=True)
    code, _, err = _memories("inject", "--client", "codex", "--force")
    assert code == 1 and "link" in err
    assert list((isolated_home / "x").iterdir()) == []

    code, out, err = _memories("inject", "--client", "claude-code", "--force")
    assert code == 0, err
    assert "replaced" in out and mine.read_bytes() == bundled_skill().data


def test_two_installer_processes_at_once_both_succeed_with_one_file(isolated_home: Path) -> None:
    args = [
        script("memories"),
        "inject",
        "--client",
        "claude-code",
        "--client",
        "opencode",
        "--json",
    ]
    procs = [
        subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], outputs
    results = [[t["result"] for t in json.loads(out)["targets"]] for out, _ in outputs]
    for column in zip(*results, strict=True):
        assert column.count("created") == 1 and column.count("unchanged") == 3, results
    for folder in (".claude/skills/memories", ".config/opencode/skills/memories"):
        assert [p.name for p in (isolated_home / folder).iterdir()] == [SKILL_FILE]
        assert (isolated_home / folder / SKILL_FILE).read_bytes() == bundled_skill().data
