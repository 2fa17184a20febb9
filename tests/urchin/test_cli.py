from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import CliResult
from urchin.event import Event

Urchin = Callable[..., CliResult]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_ingest_recent_and_query_through_the_entry_point(
    urchin: Urchin, journal_path: Path, tmp_path: Path
) -> None:
    first = urchin(
        "ingest",
        "Hardened intake auth.",
        "--source",
        "copilot",
        "--workspace",
        "/home/u/project",
        "--tag",
        "substrate",
        "--tag",
        "auth",
        "--title",
        "auth",
        "--session",
        "s1",
        "--json",
    )
    assert first.code == 0, first.stderr
    assert first.json()["status"] == "ok"
    second = urchin("ingest", "Deployed 你好 build", "--kind", "command", "--json", cwd=tmp_path)
    assert second.code == 0, second.stderr

    lines = _lines(journal_path)
    assert [line["id"] for line in lines] == [first.json()["id"], second.json()["id"]]
    assert lines[0]["tags"] == ["substrate", "auth"]
    assert lines[0]["session"] == "s1"
    assert lines[1]["workspace"] == str(tmp_path)  # defaults to the current folder
    assert lines[1]["source"] == "cli"
    assert lines[1]["actor"]["device"]  # type: ignore[index]

    recent = urchin("recent", "--json")
    assert recent.code == 0
    assert [e["content"] for e in recent.json()["events"]] == [
        "Deployed 你好 build",
        "Hardened intake auth.",
    ]
    only_copilot = urchin("recent", "-n", "5", "--source", "copilot", "--json").json()
    assert [e["source"] for e in only_copilot["events"]] == ["copilot"]

    found = urchin("query", "HARDENED", "--json").json()
    assert found["count"] == 1 and found["events"][0]["id"] == first.json()["id"]
    assert urchin("query", "substrate", "--json").json()["count"] == 1  # tags are searched
    assert urchin("query", "你好", "--json").json()["count"] == 1
    assert urchin("query", "nothing-like-this", "--json").json()["count"] == 0

    table = urchin("recent")
    assert table.code == 0
    assert "Deployed 你好 build" in table.stdout and "copilot" in table.stdout


def test_hours_window_filters_old_events(urchin: Urchin, journal_path: Path) -> None:
    journal_path.parent.mkdir(parents=True)
    old = Event.from_json(
        {
            "id": "56816532-adb7-4000-8a0f-1dda8408aab5",
            "timestamp": "2020-01-01T00:00:00Z",
            "source": "s",
            "kind": "agent",
            "content": "ancient history",
        }
    )
    journal_path.write_bytes(old.to_line())
    assert urchin("ingest", "fresh history", "--json").code == 0
    assert urchin("query", "history", "--json").json()["count"] == 2
    assert urchin("query", "history", "--hours", "24", "--json").json()["count"] == 1
    assert urchin("recent", "--hours", "1", "--json").json()["count"] == 1


def test_ingest_reads_content_from_stdin(urchin: Urchin, journal_path: Path) -> None:
    result = urchin("ingest", "-", "--json", input="line one\nline two\n")
    assert result.code == 0
    assert _lines(journal_path)[0]["content"] == "line one\nline two\n"


@pytest.mark.parametrize(
    "args",
    [
        ("ingest", "   "),
        ("ingest", "ok", "--source", " "),
        ("ingest", "ok", "--kind", " "),
        ("query", "  "),
        ("recent", "-n", "0"),
        ("recent", "--hours", "-1"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    urchin: Urchin, journal_path: Path, args: tuple[str, ...]
) -> None:
    result = urchin(*args)
    assert result.code == 2
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr
    assert not journal_path.exists()


def test_blank_stdin_and_invalid_utf8_stdin_are_rejected(
    urchin: Urchin, journal_path: Path
) -> None:
    assert urchin("ingest", "-", input=" \n").code == 2
    bad = urchin("ingest", "-", "--json", input=b"\xff\xfe")
    assert bad.code == 2
    assert json.loads(bad.stderr)["error"]["code"] == "invalid_input"
    assert not journal_path.exists()


def test_unwritable_journal_exits_1_with_a_clear_error(urchin: Urchin, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    env = {"URCHIN_JOURNAL_PATH": str(blocker / "events.jsonl")}
    result = urchin("ingest", "hello", env=env)
    assert result.code == 1
    assert "cannot append to the journal" in result.stderr
    assert "Traceback" not in result.stderr
    doctor = urchin("doctor", "--json", env=env)
    assert doctor.code == 1
    assert doctor.json()["journal"]["writable"] is False


def test_damaged_journal_is_still_readable_and_reported(urchin: Urchin, journal_path: Path) -> None:
    journal_path.parent.mkdir(parents=True)
    good = [Event.create(f"event {i}", "s").to_line() for i in range(3)]
    big = Event.create("B" * 5_000_000, "big").to_line()
    journal_path.write_bytes(
        good[0] + b"garbage line\n" + b"\xff\xfe\n" + big + good[1] + good[2] + b'{"torn":'
    )
    recent = urchin("recent", "--json")
    assert recent.code == 0
    assert recent.json()["count"] == 4
    assert recent.json()["skipped_malformed"] == 2
    assert recent.json()["torn_tail"] is True

    query = urchin("query", "event", "--json")
    assert query.code == 0 and query.json()["count"] == 3

    doctor = urchin("doctor", "--json")
    assert doctor.code == 0
    report = doctor.json()["journal"]
    assert report["events"] == 4
    assert report["malformed_lines"] == 2
    assert report["torn_tail"] is True
    assert report["size_bytes"] == journal_path.stat().st_size
    human = urchin("doctor")
    assert "skipped      2 malformed" in human.stdout
    assert "torn tail" in human.stdout


def test_doctor_reports_identity_config_and_last_event(urchin: Urchin) -> None:
    env = {"URCHIN_ACCOUNT": "ada", "URCHIN_DEVICE": "lovelace"}
    urchin("ingest", "first", env=env)
    last = urchin("ingest", "last", "--source", "git", "--kind", "commit", "--json", env=env)
    report = urchin("doctor", "--json", env=env).json()
    assert report["ok"] is True
    assert report["identity"] == {"account": "ada", "device": "lovelace"}
    assert report["journal"]["events"] == 2
    assert report["journal"]["last_event"]["id"] == last.json()["id"]
    assert report["journal"]["last_event"]["kind"] == "commit"
    assert report["config"]["config_exists"] is False
    assert report["ephemeral"]["active"] is False


def test_ephemeral_mode_discards_writes_until_ended(urchin: Urchin, journal_path: Path) -> None:
    assert urchin("ingest", "before", "--json").code == 0
    started = urchin("ephemeral", "start", "--json")
    assert started.code == 0 and started.json()["active"] is True
    since = started.json()["since"]
    assert urchin("ephemeral", "start", "--json").json()["since"] == since  # idempotent

    dropped = urchin("ingest", "secret plans", "--json")
    assert dropped.code == 0
    assert dropped.json()["status"] == "dropped" and dropped.json()["reason"] == "ephemeral"
    assert "discarded" in urchin("ingest", "more secrets").stderr
    assert urchin("ephemeral", "status", "--json").json() == {"active": True, "since": since}

    assert urchin("ephemeral", "end", "--json").json()["active"] is False
    assert urchin("ingest", "after", "--json").json()["status"] == "ok"
    assert [line["content"] for line in _lines(journal_path)] == ["before", "after"]
    assert "off" in urchin("ephemeral", "status").stdout


def test_config_set_show_and_env_override(urchin: Urchin, isolated_home: Path) -> None:
    config_file = isolated_home / ".config" / "urchin" / "config.toml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("# my settings\nvault_root = '~/notes'\n", encoding="utf-8")
    assert urchin("config", "set", "intake_port", "18800").code == 0
    assert urchin("config", "set", "intake_token", "-", input="s3cret-value\n").code == 0
    assert "# my settings" in config_file.read_text(encoding="utf-8")  # comments kept
    assert oct(config_file.stat().st_mode & 0o777) == "0o600"

    shown = urchin("config", "show", "--json")
    assert shown.code == 0
    data = shown.json()
    assert data["values"]["intake_port"] == 18800
    assert data["values"]["vault_root"] == str(isolated_home / "notes")
    assert data["values"]["intake_token"] == "(set)"
    assert "s3cret-value" not in shown.stdout
    assert "s3cret-value" not in urchin("config", "show").stdout
    assert "s3cret-value" not in urchin("doctor", "--json").stdout

    over = urchin("config", "show", "--json", env={"URCHIN_INTAKE_PORT": "19000"}).json()
    assert over["values"]["intake_port"] == 19000
    assert over["origins"]["intake_port"] == "env:URCHIN_INTAKE_PORT"

    assert urchin("config", "unset", "intake_port").code == 0
    assert urchin("config", "show", "--json").json()["values"]["intake_port"] == 18799


def test_config_set_rejects_bad_values_without_touching_the_file(
    urchin: Urchin, isolated_home: Path
) -> None:
    assert urchin("config", "set", "intake_port", "1234").code == 0
    config_file = isolated_home / ".config" / "urchin" / "config.toml"
    before = config_file.read_bytes()
    bad = urchin("config", "set", "intake_port", "not-a-port")
    assert bad.code == 2 and "intake_port" in bad.stderr
    assert urchin("config", "set", "journal_path", "relative/path").code == 2
    assert urchin("config", "set", "no_such_key", "1").code == 2
    assert config_file.read_bytes() == before


def test_invalid_config_file_names_file_line_and_key(urchin: Urchin, isolated_home: Path) -> None:
    config_file = isolated_home / ".config" / "urchin" / "config.toml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("vault_root = '~/b'\nintake_port = 'abc'\n", encoding="utf-8")
    result = urchin("recent")
    assert result.code == 1
    assert str(config_file) in result.stderr and "line 2" in result.stderr
    assert "intake_port" in result.stderr

    config_file.write_text("intake_port = = 3\n", encoding="utf-8")
    broken = urchin("recent", "--json")
    assert broken.code == 1
    error = json.loads(broken.stderr)["error"]
    assert error["code"] == "config" and "line 1" in error["message"]
    doctor = urchin("doctor", "--json")
    assert doctor.code == 1 and doctor.json()["ok"] is False


def test_help_and_version(urchin: Urchin) -> None:
    assert "ingest" in urchin("--help").stdout
    assert urchin("--version").stdout.startswith("urchin, version")
