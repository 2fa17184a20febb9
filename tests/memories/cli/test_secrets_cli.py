"""protected-card, otp, protect and run through the real console script and daemon."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyotp
import pytest

from tests.memories.cli.conftest import Memories
from tests.memories.secrets import xserver
from tests.memories.secrets.sshd import loopback_sshd, ssh_argv
from tests.support import script, wait_for

x_display = xserver.x_display  # the fixture, under its own name

CANARY = "canary-5d1e0b7a-gh-token"
OTP_SECRET = base64.b32encode(b"12345678901234567890").decode("ascii")

# The child checks, from inside, that the value is in its environment and not on its command
# line; it is given only the value's digest, and prints nothing of it.
CHILD = (
    "import hashlib, os, sys\n"
    "value = os.environ['GH_TOKEN'].encode()\n"
    "environ = open('/proc/self/environ', 'rb').read().split(b'\\0')\n"
    "cmdline = open('/proc/self/cmdline', 'rb').read()\n"
    "parent = open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')\n"
    "ok = hashlib.sha256(value).hexdigest() == sys.argv[1]\n"
    "ok = ok and b'GH_TOKEN=' + value in environ and value not in cmdline\n"
    "ok = ok and b'daemon' in parent  # started by the daemon, not by the CLI\n"
    "ok = ok and sys.stdin.read() == 'from the terminal'\n"
    "print('child ok' if ok else 'child wrong')\n"
    "sys.exit(0 if ok else 7)\n"
)


def test_a_token_reaches_a_program_only_through_its_environment(store: Memories) -> None:
    denied = store("protected-card", "GitHub", "--label", "github", "--kind", "env",
                   "--env", "GH_TOKEN", "--secret-stdin", input=CANARY + "\n")  # fmt: skip
    assert denied.code == 3 and "sudo" in denied.stderr
    store.ok("sudo")
    made = store.ok("protected-card", "GitHub", "--label", "github", "--kind", "env",
                    "--env", "GH_TOKEN", "--secret-stdin", input=CANARY + "\n")  # fmt: skip
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    result = store(
        "run", "--env", "GH_TOKEN=github", "--", sys.executable, "-c", CHILD, digest,
        input="from the terminal",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert "child ok" in result.stdout
    failing = store("run", "--env", "GH_TOKEN=github", "--", sys.executable, "-c",
                    "import sys; sys.exit(5)")  # fmt: skip
    assert failing.code == 5
    shown = [
        store("ls", "--json").stdout,
        store("show", made["card"], "--json").stdout,
        store("show", made["credential"], "--json").stdout,
        store("history", made["card"], "--json").stdout,
        store("audit", "--json").stdout,
        result.stdout + result.stderr + failing.stdout + failing.stderr,
    ]
    assert not any(CANARY in text for text in shown)
    audit = store.ok("audit")
    actions = [entry["action"] for entry in audit["entries"]]
    assert actions.count("run.start") == 2 and actions.count("run.finish") == 2


def test_run_refuses_a_missing_program_before_decrypting_anything(store: Memories) -> None:
    store.ok("sudo")
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY)  # fmt: skip
    missing = store("run", "--env", "T=github", "--", "no-such-program-here")
    assert missing.code == 1 and "not found" in missing.stderr
    actions = [entry["action"] for entry in store.ok("audit")["entries"]]
    assert "run.start" not in actions


def test_otp_prints_the_next_hotp_code_and_needs_elevation(store: Memories) -> None:
    store.ok("sudo")
    store.ok("protected-card", "Token", "--label", "hw", "--kind", "hotp", "--secret-stdin",
             input=OTP_SECRET)  # fmt: skip
    first = store("otp", "hw")
    assert first.code == 0, first.stderr
    assert first.stdout.strip() == "755224"
    assert store.ok("otp", "hw")["code"] == "287082"
    store.ok("lock")
    store.ok("unlock")
    refused = store.fails(3, "otp", "hw")
    assert "sudo" in refused["message"]


def test_protect_replaces_text_read_from_stdin(store: Memories) -> None:
    store.ok("sudo")
    note = store.ok("put", f"token: {CANARY}", "--title", "deploy notes")
    out = store.ok("protect", note["asset"], "--label", "deploy", input=CANARY + "\n")
    assert out["replaced"] == 1
    shown = store.ok("show", note["asset"])
    assert shown["body"] == "token: {{secret:deploy}}"
    error = store.fails(2, "protect", note["asset"], "--label", "other", input="absent text")
    assert "does not occur" in error["message"]


def _clipboard() -> str:
    done = subprocess.run(
        ["xclip", "-selection", "clipboard", "-out"], capture_output=True, timeout=10, check=False
    )
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else ""


def test_copy_puts_the_secret_on_the_clipboard_and_clears_it(
    store: Memories, x_display: str
) -> None:
    store.ok("sudo")
    made = store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
                    "--secret-stdin", input=CANARY)  # fmt: skip
    result = store("copy", "github", "--clear-after", "1", "--json")
    assert result.code == 0, result.stderr
    out = result.json()
    assert out["copied"] is True and out["card"] == made["card"]
    assert CANARY not in result.stdout + result.stderr
    # Cleared by the helper after a second (waited for, with a deadline).
    wait_for(lambda: _clipboard() == "", timeout=20)
    entries = store.ok("audit")["entries"]
    copies = [e for e in entries if e["action"] == "credential.copy"]
    assert len(copies) == 1
    assert CANARY not in json.dumps(entries)


def test_copy_of_a_totp_card_copies_the_current_code(store: Memories, x_display: str) -> None:
    store.ok("sudo")
    store.ok("protected-card", "Bank", "--label", "bank", "--kind", "totp", "--secret-stdin",
             input=OTP_SECRET)  # fmt: skip
    result = store("copy", "bank", "--clear-after", "0", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["otp"] == "totp"
    totp = pyotp.TOTP(OTP_SECRET)
    now = time.time()
    assert _clipboard() in {totp.at(now + delta) for delta in (-30, 0)}


def test_copy_without_a_clipboard_tool_copies_and_audits_nothing(
    store: Memories, x_display: str, tmp_path: Path
) -> None:
    store.ok("sudo")
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY)  # fmt: skip
    empty = tmp_path / "empty-path"
    empty.mkdir()
    error = store.fails(1, "copy", "github", env={"PATH": str(empty)})
    assert "xclip" in error["message"] and CANARY not in error["message"]
    actions = [entry["action"] for entry in store.ok("audit")["entries"]]
    assert "credential.copy" not in actions
    assert _clipboard() == ""


def test_copy_needs_elevation_and_a_known_label(store: Memories, x_display: str) -> None:
    refused = store.fails(3, "copy", "github")
    assert "sudo" in refused["message"]
    store.ok("sudo")
    missing = store.fails(1, "copy", "no-such-label")
    assert "no protected card" in missing["message"]


def test_credential_generate_prints_only_the_public_key(store: Memories, tmp_path: Path) -> None:
    denied = store("credential", "generate", "ssh", "deploy key")
    assert denied.code == 3 and "sudo" in denied.stderr
    store.ok("sudo")
    made = store("credential", "generate", "ssh", "deploy key", "--label", "deploy")
    assert made.code == 0, made.stderr
    line = made.stdout.strip()
    assert line.startswith("ssh-ed25519 ") and line.endswith(" deploy")
    assert "PRIVATE KEY" not in made.stdout + made.stderr
    public = store("credential", "public", "deploy")
    assert public.code == 0 and public.stdout.strip() == line
    shown = store.ok("credential", "public", "deploy")
    key_file = tmp_path / "deploy.pub"
    key_file.write_text(public.stdout, encoding="utf-8")
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key_file)],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert listed.stdout.split()[1] == shown["fingerprint"]
    everything = store("ls", "--json").stdout + store("audit", "--json").stdout
    assert "PRIVATE KEY" not in everything
    tls = store("credential", "generate", "tls", "intranet", "--name", "intranet.lan")
    assert tls.code == 0 and tls.stdout.startswith("-----BEGIN CERTIFICATE-----")
    bad = store.fails(2, "credential", "generate", "ssh", "weak", "--type", "rsa", "--bits", "1024")
    assert "3072" in bad["message"]


@pytest.fixture
def daemon_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A TMPDIR of this test's own for the daemon it starts (requested before ``store``), so
    what the daemon leaves there is told apart from other tests' agents. Short: socket paths
    must fit in 108 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="mt-"))
    monkeypatch.setenv("TMPDIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_generated_key_logs_in_to_sshd_through_run_and_never_leaves_the_daemon(
    daemon_tmpdir: Path, store: Memories, tmp_path: Path
) -> None:
    store.ok("sudo")
    public = store("credential", "generate", "ssh", "login key", "--label", "login")
    assert public.code == 0, public.stderr
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY + "\n")  # fmt: skip
    with loopback_sshd(tmp_path, public.stdout.strip()) as port:
        ssh = ssh_argv(port, tmp_path / "known")
        login = store("run", "--ssh-key", "login", "--", *ssh, "echo", "logged-in")
        assert login.code == 0, login.stderr
        assert login.stdout.strip() == "logged-in"
        # Without the key, the same ssh has nothing to offer and is refused.
        without = store("run", "--env", "T=github", "--", *ssh, "true")
        assert without.code == 255
    not_a_key = store("run", "--ssh-key", "github", "--", "true")
    assert not_a_key.code == 2 and "--ssh-key takes" in not_a_key.stderr
    unknown = store("run", "--ssh-key", "no-such-key", "--", "true")
    assert unknown.code == 1 and "no protected card" in unknown.stderr
    finished = [e for e in store.ok("audit")["entries"] if e["action"] == "run.finish"]
    assert any(e.get("details", {}).get("ssh_signatures") == 1 for e in finished), finished
    assert not list(daemon_tmpdir.glob("memories-agent-*"))
    everything = store("ls", "--json").stdout + store("audit", "--json").stdout
    assert "PRIVATE KEY" not in everything + login.stdout + login.stderr


SLEEPER = (
    "import signal, sys, time\n"
    "print('ready', flush=True)\n"
    "signal.sigwait({signal.SIGTERM})\n"
    "sys.exit(42)\n"
)


def test_run_forwards_sigterm_to_the_program(store: Memories) -> None:
    store.ok("sudo")
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY)  # fmt: skip
    # sigwait needs the signal blocked first; the child blocks it before it says ready.
    child = "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n" + SLEEPER
    cli = subprocess.Popen(
        [script("memories"), "run", "--env", "T=github", "--", sys.executable, "-c", child],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert cli.stdout is not None
        assert cli.stdout.readline().strip() == b"ready"
        cli.send_signal(signal.SIGTERM)
        code = cli.wait(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert code == 42  # the program got SIGTERM through the daemon, and its status came back
    actions = [entry["action"] for entry in store.ok("audit")["entries"]]
    assert actions.count("run.finish") == 1


def test_a_run_binding_supplies_the_variables(store: Memories) -> None:
    store.ok("sudo")
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY)  # fmt: skip
    bound = store.ok("run-binding", "set", sys.executable, "--env", "GH_TOKEN=github")
    assert bound["env"] == {"GH_TOKEN": "github"}
    listed = store.ok("run-binding", "list")["bindings"]
    assert listed[0]["env"] == {"GH_TOKEN": "github"} and CANARY not in json.dumps(listed)
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    result = store("run", "--", sys.executable, "-c", CHILD, digest, input="from the terminal")
    assert result.code == 0, result.stderr
    assert "child ok" in result.stdout and CANARY not in result.stdout + result.stderr
    store.ok("run-binding", "remove", sys.executable)
    unbound = store("run", "--", sys.executable, "-c", "pass")
    assert unbound.code == 2 and "run-binding" in unbound.stderr


# The child checks the private file it was given: content, mode and its folder's mode.
FILE_CHILD = (
    "import hashlib, os, stat, sys\n"
    "path = sys.argv[1]\n"
    "data = open(path, 'rb').read()\n"
    "ok = hashlib.sha256(data).hexdigest() == sys.argv[2]\n"
    "ok = ok and stat.S_IMODE(os.stat(path).st_mode) == 0o600\n"
    "ok = ok and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700\n"
    "print(path if ok else 'wrong', flush=True)\n"
    "if len(sys.argv) > 3: os.kill(os.getpid(), int(sys.argv[3]))\n"
)


def _stored_file(store: Memories, tmp_path: Path) -> tuple[str, str]:
    config = tmp_path / "kubeconfig.yaml"
    config.write_text(f"token: {CANARY}\n", encoding="utf-8")
    put = store.ok("file", "put", str(config))
    return put["asset"], hashlib.sha256(config.read_bytes()).hexdigest()


def test_file_exec_gives_a_private_path_and_removes_it(store: Memories, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {"TMPDIR": str(scratch)}
    asset, digest = _stored_file(store, tmp_path)
    done = store("file", "exec", asset, "--", sys.executable, "-c", FILE_CHILD, "{}", digest,
                 env=env)  # fmt: skip
    assert done.code == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path.name == "kubeconfig.yaml" and path.parent.parent == scratch
    assert not path.exists() and list(scratch.iterdir()) == []
    assert CANARY not in done.stdout + done.stderr
    # A crash of the program removes it too.
    crashed = store("file", "exec", asset, "--", sys.executable, "-c", FILE_CHILD, "{}", digest,
                    str(int(signal.SIGSEGV)), env=env)  # fmt: skip
    assert crashed.code == 128 + signal.SIGSEGV
    assert list(scratch.iterdir()) == []
    # A missing program or a missing {} fetches nothing.
    reads = len(store.ok("audit")["entries"])
    missing = store("file", "exec", asset, "--", "no-such-program-here", "{}", env=env)
    assert missing.code == 1 and "not found" in missing.stderr
    no_slot = store("file", "exec", asset, "--", sys.executable, "-c", "pass", env=env)
    assert no_slot.code == 2 and "{}" in no_slot.stderr
    assert len(store.ok("audit")["entries"]) == reads
    assert list(scratch.iterdir()) == []


def test_file_exec_removes_the_file_on_sigterm(store: Memories, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    asset, _ = _stored_file(store, tmp_path)
    child = (
        "import signal, sys\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
        "print(open(sys.argv[1]).read().startswith('token: '), flush=True)\n"
        "signal.sigwait({signal.SIGTERM})\n"
        "sys.exit(42)\n"
    )
    cli = subprocess.Popen(
        [script("memories"), "file", "exec", asset, "--", sys.executable, "-c", child, "{}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    try:
        assert cli.stdout is not None
        assert cli.stdout.readline().strip() == b"True"
        assert len(list(scratch.iterdir())) == 1  # the private folder, while it runs
        cli.send_signal(signal.SIGTERM)
        code = cli.wait(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert code == 42
    assert list(scratch.iterdir()) == []


def test_a_lock_during_the_run_keeps_the_status_and_says_it_was_not_audited(
    store: Memories,
) -> None:
    store.ok("sudo")
    store.ok("protected-card", "GitHub", "--label", "github", "--kind", "token",
             "--secret-stdin", input=CANARY)  # fmt: skip
    child = "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n" + (
        SLEEPER.replace("sys.exit(42)", "sys.exit(3)")
    )
    cli = subprocess.Popen(
        [script("memories"), "run", "--env", "T=github", "--", sys.executable, "-c", child],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert cli.stdout is not None and cli.stderr is not None
        assert cli.stdout.readline().strip() == b"ready"
        store.ok("lock")
        cli.send_signal(signal.SIGTERM)
        code = cli.wait(timeout=30)
        stderr = cli.stderr.read().decode()
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert code == 3, stderr
    assert "not audited" in stderr and CANARY not in stderr
    store.ok("unlock")
    actions = [entry["action"] for entry in store.ok("audit")["entries"]]
    assert "run.start" in actions and "run.finish" not in actions
    log = Path(os.environ["MEMORIES_HOME"], "daemon.log")
    assert not log.exists() or CANARY not in log.read_text(encoding="utf-8", errors="replace")
