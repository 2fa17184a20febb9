"""Bad input gets a clear error and the right exit code, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.memories.cli.conftest import FLOOR_KDF, Memories

BAD_ARGUMENTS = [
    ("put", "text", "--meta", "topic=x"),  # --meta without a card type
    ("put", "text", "--card-type", "knowledge", "--meta", "confidence=high"),
    ("put", "text", "--card-type", "knowledge", "--meta", "nonsense"),
    ("put", "text", "--card-type", "no-such-type"),
    ("put", "   "),
    ("put", "x", "--no-such-option"),
    ("ls", "--kind", "folder"),
    ("audit", "--limit", "0"),
    ("graph", "--dot", "--json"),
    ("show", "zz"),  # not an id prefix
    ("edit", "abcd1234", "x", "--fork"),  # --fork needs --base
]


def test_bad_input_gets_the_right_exit_code_and_nothing_is_written(store: Memories) -> None:
    for args in BAD_ARGUMENTS:
        error = store.fails(2, *args)
        assert error["code"] == "invalid_input", args
        assert error["message"], args
    human = store("put", "   ")
    assert human.code == 2
    assert human.stderr.startswith("error:") and "empty" in human.stderr
    assert store.ok("ls")["summaries"] == []  # nothing was written

    unknown = store.fails(1, "show", "deadbeef")
    assert unknown["code"] == "not_found"
    human_unknown = store("show", "deadbeef")
    assert human_unknown.code == 1
    assert human_unknown.stderr.startswith("error:")
    assert "Traceback" not in human_unknown.stderr

    again = store.fails(1, "init", *FLOOR_KDF)
    assert again["code"] == "conflict" and "memories unlock" in again["message"]


def test_without_a_daemon_or_a_store_the_error_says_what_to_do(memories: Memories) -> None:
    result = memories("--no-daemon-autostart", "status")
    assert result.code == 1
    assert "memories daemon start" in result.stderr
    assert "Traceback" not in result.stderr
    by_env = memories("status", "--json", env={"MEMORIES_NO_AUTOSTART": "1"})
    assert by_env.code == 1
    assert by_env.json()["error"]["code"] == "unavailable"
    assert memories.ok("daemon", "status")["running"] is False
    no_password = memories("unlock", env={"MEMORIES_PASSWORD": ""})
    assert no_password.code == 2
    assert "MEMORIES_PASSWORD" in no_password.stderr and "--password-stdin" in no_password.stderr

    # Autostart: the first command starts the daemon and says so on standard error.
    status = memories("status", "--json")
    assert status.code == 0
    assert "started the memories daemon" in status.stderr
    assert status.json()["initialized"] is False
    assert "memories init" in memories.fails(1, "ls")["message"]
    empty = memories("init", "--password-stdin", *FLOOR_KDF, input="\n")
    assert empty.code == 2
    assert "empty" in empty.stderr


_BUGGY = """
import sys
from memories.cli import cli, main
from memories.cli.common import json_option, reports_errors

@cli.command("explode")
@json_option
@reports_errors
def explode(as_json: bool) -> None:
    raise RuntimeError("the words of a private memory")

sys.argv = ["memories", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("as_json", [False, True])
def test_a_bug_is_one_line_without_its_text_or_a_traceback(as_json: bool) -> None:
    args = ["explode", "--json"] if as_json else ["explode"]
    proc = subprocess.run(
        [sys.executable, "-c", _BUGGY, *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    output = proc.stdout + proc.stderr
    assert "private memory" not in output and "Traceback" not in output
    if as_json:
        assert json.loads(proc.stdout)["error"]["code"] == "error"
        assert "internal error (RuntimeError)" in json.loads(proc.stdout)["error"]["message"]
    else:
        assert "internal error (RuntimeError)" in proc.stderr
