"""What a locked daemon still holds: a scan of its memory for the password, keys and plaintext.

A real daemon is started through the CLI, and the CLI runs ``unlock; sudo; show PRIVATE`` on
it. Its readable memory (``/proc/<pid>/mem``, so this needs root or ptrace rights: the daemon
makes itself non-dumpable) is dumped twice: while unlocked (the baseline) and after ``lock``.
Then, with the daemon stopped, the store is opened in this process to learn the master key, the
store subkeys and the vaults' epoch keys, and both dumps are searched for every secret.

Each line reports how many copies survive the lock against how many were there before; the
goal for keys is 0. Immutable Python ``str``/``bytes`` copies of request text (the password, a
private body) cannot be wiped by Python code: their count is reported as measured, and
docs/SECURITY.md explains the limit.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import report
from memories.config import load_settings
from memories.daemon.launcher import pid_file
from memories.paths import state_dir
from memories.store import Store

PASSWORD = "memscan-" + secrets.token_hex(12)
_MAPS = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (r)")


def _cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "memories"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memories {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout


def _dump(pid: int) -> bytes:
    """Every readable mapping of ``pid`` concatenated (unreadable ones skipped)."""
    chunks: list[bytes] = []
    maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8").splitlines()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            found = _MAPS.match(line)
            if found is None or "[vvar]" in line or "[vsyscall]" in line:
                continue
            start, end = int(found.group(1), 16), int(found.group(2), 16)
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, OverflowError, ValueError):
                continue
    return b"".join(chunks)


def _keys(store_path: Path, anchors: Path) -> dict[str, list[bytes]]:
    """The key material of the store at ``store_path``, learned by opening it here."""
    from memories.vault import Vaults

    store = Store.open(store_path, state_dir=anchors)
    try:
        store.unlock(PASSWORD)
        session_keys = store._require().keys  # measuring what the store holds
        found = {
            "master_key": [bytes(session_keys.master)],
            "store_subkeys": [bytes(k) for k in session_keys.buffers()[1:]],
        }
        vaults = Vaults(store)
        epoch: list[bytes] = []
        for info in vaults.vaults():
            record = vaults.resolve_vault(info.id)
            for number in record.keys:
                epoch.append(bytes(vaults._keys.epoch_key(record, number)))
        vaults.close()
        found["epoch_keys"] = epoch
        return found
    finally:
        store.close()


def _count(dump: bytes, needles: list[bytes]) -> int:
    return sum(dump.count(needle) for needle in needles if needle)


def run(quick: bool = False) -> None:
    if not os.path.exists("/proc/self/mem"):
        report("memscan", "skipped", 0, "n/a", reason="needs /proc (Linux)")
        return
    private_body = "PRIVATE-" + secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="memories-memscan-") as tmp:
        home = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(home),
            "MEMORIES_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "MEMORIES_PASSWORD": PASSWORD,
        }
        settings = load_settings(env)
        try:
            _cli(env, "init", "--kdf-time-cost", "1", "--kdf-memory-mib", "19", "--json")
            asset = _cli(
                env, "put", "--private", "--title", "diary", "--json", "-", stdin=private_body
            )
            ref = json.loads(asset)["asset"]
            _cli(env, "lock")
            _cli(env, "unlock")
            _cli(env, "sudo")
            _cli(env, "show", ref, "--json")
            pid = int(pid_file(settings).read_text(encoding="utf-8"))
            try:
                unlocked = _dump(pid)
            except PermissionError:
                report("memscan", "skipped", 0, "n/a", reason="reading daemon memory needs root")
                return
            _cli(env, "lock")
            locked = _dump(pid)
        finally:
            subprocess.run(
                [str(Path(sys.executable).parent / "memories"), "daemon", "stop"],
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
        secrets_by_kind = _keys(settings.store_path, state_dir(env))
        secrets_by_kind["password"] = [PASSWORD.encode("utf-8")]
        secrets_by_kind["private_plaintext"] = [private_body.encode("utf-8")]
        for kind, needles in secrets_by_kind.items():
            before, after = _count(unlocked, needles), _count(locked, needles)
            report(
                "memscan",
                f"{kind}_copies_after_lock",
                after,
                "copies",
                before,
                higher_is_better=False,
                baseline_name="copies while unlocked, after show",
                searched=len(needles),
                dump_mib=round(len(locked) / 2**20, 1),
            )
