"""The started daemon's environment: an allowlist, never a secret."""

from __future__ import annotations

import os
import subprocess
import sys

from memories.daemon.environment import daemon_environment, is_secret_name, take_variable


def test_only_allowlisted_settings_pass_and_never_a_secret() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/ada",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "TMPDIR": "/tmp/x",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "MEMORIES_HOME": "/data",
        "MEMORIES_IDLE_LOCK_MINUTES": "5",
        "MEMORIES_PASSWORD": "hunter2",
        "MEMORIES_NEW_PASSWORD": "hunter3",
        "MEMORIES_LISTEN_TOKEN": "t",
        "XDG_SESSION_SECRET": "s",
        "LC_API_KEY": "k",
        "GITHUB_TOKEN": "ghp",
        "AWS_SECRET_ACCESS_KEY": "a",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "EDITOR": "vim",
        "MEMORIES_SOMETHING_NEW": "1",
    }
    assert daemon_environment(env) == {
        "PATH": "/usr/bin",
        "HOME": "/home/ada",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "TMPDIR": "/tmp/x",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "MEMORIES_HOME": "/data",
        "MEMORIES_IDLE_LOCK_MINUTES": "5",
    }


def test_secret_names_are_recognised_in_any_case() -> None:
    secret = ("MEMORIES_PASSWORD", "db_password", "X_TOKEN", "A_SECRET", "API_KEY", "PASSPHRASE")
    for name in secret:
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "MEMORIES_HOME", "KEYBOARD", "XDG_CONFIG_HOME", "LC_ALL"):
        assert not is_secret_name(name), name


def test_a_taken_variable_is_gone_for_children_and_from_the_environment_block() -> None:
    script = (
        "import os, subprocess, sys\n"
        "from memories.daemon.environment import take_variable\n"
        "assert take_variable('MEMORIES_PASSWORD') == 'swordfish-42'\n"
        "assert take_variable('MEMORIES_PASSWORD') is None\n"
        "child = subprocess.run([sys.executable, '-c',"
        " 'import os; print(os.environ.get(\"MEMORIES_PASSWORD\"))'],"
        " capture_output=True, text=True, check=True).stdout.strip()\n"
        "block = open('/proc/self/environ', 'rb').read() if os.path.exists('/proc/self') else b''\n"
        "print(child, b'swordfish-42' in block, b'KEEP_ME=yes' in block or not block)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "MEMORIES_PASSWORD": "swordfish-42", "KEEP_ME": "yes"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "False", "True"]


def test_taking_from_a_plain_mapping_only_removes_it() -> None:
    env = {"A_TOKEN": "x", "OTHER": "y"}
    assert take_variable("A_TOKEN", env) == "x"
    assert env == {"OTHER": "y"}
    assert take_variable("A_TOKEN", env) is None
