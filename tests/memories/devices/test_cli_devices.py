"""Two people on three devices, each store in its own home with its own daemon, driven through
the real `memories` command line: pair, share, edit on every side via bundles, revoke a device,
remove a person. Refusals exit with a clear error, change nothing and are audited; no key or
content appears in any string, file, output or log that leaves a store."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memories import paths
from memories.config import load_settings
from memories.crypto import b64u_encode
from memories.daemon.launcher import daemon_pid
from memories.processes import alive
from memories.store import Store
from memories.vault import Vaults
from tests.support import CliResult, run_cli, wait_for

PASSWORD = "correct horse battery staple"
FLOOR_KDF = ("--kdf-time-cost", "1", "--kdf-memory-mib", "19", "--kdf-parallelism", "1")
CANARY = "canary-content-7f3a9c"


class Home:
    """One device: its own HOME, data home and daemon."""

    def __init__(self, root: Path, name: str) -> None:
        home = root / name
        home.mkdir()
        self.root = home
        self.env = {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "MEMORIES_HOME": str(home / ".local" / "share" / "memories"),
            "MEMORIES_PASSWORD": PASSWORD,
        }
        self.outputs: list[str] = []

    def __call__(self, *args: str) -> CliResult:
        result = run_cli("memories", *args, input="", env=self.env, timeout=120)
        self.outputs.append(result.stdout + result.stderr)
        return result

    def ok(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.code == 0, (args, result.stdout, result.stderr)
        return result.json()

    def fails(self, code: int, *args: str) -> dict[str, Any]:
        result = self(*args, "--json")
        assert result.code == code, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stdout + result.stderr
        return dict(result.json()["error"])

    def stop(self) -> None:
        pid = daemon_pid(load_settings({**os.environ, **self.env}))
        run_cli("memories", "daemon", "stop", env=self.env, timeout=30)
        if pid is not None and alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not alive(pid), timeout=10)

    def seq(self) -> int:
        return len(self.ok("audit", "-n", "1000")["entries"])

    def titles(self, vault: str) -> set[str]:
        return {item["title"] for item in self.ok("ls", "--vault", vault)["summaries"]}

    def secrets(self) -> list[str]:
        """After the daemon stopped: the user signing key and every vault key, base64url."""
        env = {**os.environ, **self.env}
        path = load_settings(env).store_path
        with Store.open(path, state_dir=paths.state_dir(env)) as store:
            store.unlock(PASSWORD)
            vaults = Vaults(store)
            found = [b64u_encode(bytes(vaults.identity.user.private_bytes()))]
            for info in vaults.vaults():
                found += [b64u_encode(k) for k in vaults.resolve_vault(info.id).keys.values()]
            vaults.close()
        return found


def join(desk: Home, laptop: Home, folder: Path) -> str:
    """Pair ``laptop`` (a fresh home) with ``desk`` (initialized): request, approve with the
    full fingerprint, join. Returns the laptop's device fingerprint."""
    approver = desk.ok("status")["identity"]["device"]
    laptop.ok("init", "--join", *FLOOR_KDF, "--device-name", "laptop")
    req, approval = folder / "req.txt", folder / "approval.txt"
    issued = laptop.ok("device", "request", "--approver", approver, "--out", str(req))
    assert desk("sudo").code == 0
    desk.ok("device", "approve", f"@{req}", "--fingerprint", issued["fingerprint"],
            "--out", str(approval))  # fmt: skip
    return str(laptop.ok("device", "join", f"@{approval}")["identity"]["device"])


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[dict[str, Home]]:
    made = {name: Home(tmp_path, name) for name in ("desk", "laptop", "bob")}
    try:
        yield made
    finally:
        for home in made.values():
            home.stop()


@pytest.mark.timeout(480)  # about seventy real command runs against three daemons
def test_two_people_three_devices_share_edit_revoke_and_remove(
    homes: dict[str, Home], tmp_path: Path
) -> None:
    desk, laptop, bob = homes["desk"], homes["laptop"], homes["bob"]
    desk.ok("init", *FLOOR_KDF, "--user-name", "Olga")
    approver = desk.ok("status")["identity"]["device"]
    laptop.ok("init", "--join", *FLOOR_KDF, "--device-name", "laptop")
    assert laptop.ok("status")["joining"] is True
    req = tmp_path / "req.txt"
    issued = laptop.ok("device", "request", "--approver", approver, "--out", str(req))
    print_ = issued["fingerprint"]
    assert len(print_) == 71

    # Approving needs elevation, the full fingerprint, and a matching one.
    assert (
        desk.fails(3, "device", "approve", f"@{req}", "--fingerprint", print_)["code"] == "denied"
    )
    assert desk("sudo").code == 0
    assert desk.fails(2, "device", "approve", f"@{req}", "--fingerprint", print_[:23])
    wrong = print_[:-1] + ("0" if print_[-1] != "0" else "1")
    error = desk.fails(3, "device", "approve", f"@{req}", "--fingerprint", wrong)
    assert "does not match" in error["message"]
    approval = tmp_path / "approval.txt"
    approved = desk.ok(
        "device", "approve", f"@{req}", "--fingerprint", print_, "--out", str(approval)
    )
    assert "approval" not in approved
    joined = laptop.ok("device", "join", f"@{approval}")
    laptop_device = joined["identity"]["device"]
    assert joined["identity"]["user"] == desk.ok("status")["identity"]["user"]
    replay = laptop.fails(1, "device", "join", f"@{approval}")
    assert replay["code"] == "conflict"

    # Edits travel both ways in bundles.
    desk.ok("put", f"desk note {CANARY}", "--title", "desk note")
    desk.ok("vault", "export", "personal", "--out", str(tmp_path / "b1.bundle"))
    assert laptop.ok("vault", "import", str(tmp_path / "b1.bundle"))["revisions"] == 1
    assert laptop.titles("personal") == {"desk note"}
    laptop.ok("put", "from the laptop", "--title", "laptop note")
    laptop.ok("vault", "export", "personal", "--out", str(tmp_path / "b2.bundle"))
    desk.ok("vault", "import", str(tmp_path / "b2.bundle"))
    assert desk.titles("personal") == {"desk note", "laptop note"}

    # Sharing with Bob.
    bob.ok("init", *FLOOR_KDF, "--user-name", "Bob")
    who = bob.ok("identity", "export", "--out", str(tmp_path / "bob.id"))
    desk.ok("vault", "create", "team")
    desk.ok(
        "vault",
        "share",
        "team",
        "--identity",
        f"@{tmp_path / 'bob.id'}",
        "--role",
        "editor",
        "--fingerprint",
        who["fingerprint"],
    )
    desk.ok("put", "ship on friday", "--title", "team plan", "--vault", "team")
    desk.ok("vault", "export", "team", "--out", str(tmp_path / "t1.bundle"))
    assert bob.ok("vault", "import", str(tmp_path / "t1.bundle"))["new_vault"] is True
    assert bob.titles("team") == {"team plan"}
    bob.ok("put", "agreed", "--title", "bob note", "--vault", "team")
    bob.ok("vault", "export", "team", "--out", str(tmp_path / "t2.bundle"))
    desk.ok("vault", "import", str(tmp_path / "t2.bundle"))
    assert desk.titles("team") == {"team plan", "bob note"}
    roles = {m["user"]: m["role"] for m in desk.ok("member", "ls", "--vault", "team")["members"]}
    assert roles[who["fingerprint"]] == "editor"
    # Bob, an editor, cannot change the policy.
    bob.fails(3, "member", "role", who["fingerprint"], "admin", "--vault", "team")

    # Revoke the laptop: a new epoch it never gets; its later writes are refused.
    assert desk("sudo").code == 0
    revoked = desk.ok("device", "revoke", laptop_device, "--vault", "personal")
    assert revoked["epoch"] == 2
    statuses = {d["device"]: d["status"] for d in desk.ok("device", "ls")["devices"]}
    assert statuses[laptop_device] == "revoked"
    desk.ok("put", "after revocation", "--title", "new secret plan")
    desk.ok("vault", "export", "personal", "--out", str(tmp_path / "b3.bundle"))
    before = laptop.seq()
    laptop.fails(3, "vault", "import", str(tmp_path / "b3.bundle"))
    assert "new secret plan" not in laptop.titles("personal")
    laptop.ok("put", "sneaky", "--title", "sneaky")
    laptop.ok("vault", "export", "personal", "--out", str(tmp_path / "b4.bundle"))
    desk_before = desk.titles("personal")
    error = desk.fails(3, "vault", "import", str(tmp_path / "b4.bundle"))
    assert "revoked" in error["message"]
    assert desk.titles("personal") == desk_before
    actions = [e["action"] for e in desk.ok("audit", "-n", "20")["entries"]]
    assert "vault_import.failed" in actions
    assert laptop.seq() >= before

    # Remove Bob: the next bundle is refused on his side, and his is refused on ours.
    desk.ok("member", "remove", who["fingerprint"], "--vault", "team")
    desk.ok("put", "without bob", "--title", "private plan", "--vault", "team")
    desk.ok("vault", "export", "team", "--out", str(tmp_path / "t3.bundle"))
    bob.fails(3, "vault", "import", str(tmp_path / "t3.bundle"))
    bob.ok("put", "still here", "--title", "bob again", "--vault", "team")
    bob.ok("vault", "export", "team", "--out", str(tmp_path / "t4.bundle"))
    desk.fails(3, "vault", "import", str(tmp_path / "t4.bundle"))
    assert "bob again" not in desk.titles("team")

    # Damaged input: a clear error, nothing committed.
    junk = tmp_path / "junk.bundle"
    junk.write_bytes((tmp_path / "t1.bundle").read_bytes()[:-40])
    desk.fails(1, "vault", "import", str(junk))
    assert desk.fails(1, "device", "join", "not-an-approval")["code"] == "conflict"

    # Canary: no key or content in anything that left a store.
    for home in homes.values():
        home.stop()
    leaked = [s for home in (desk, laptop) for s in home.secrets()]
    shipped = [
        p.read_text(encoding="utf-8", errors="replace") for p in tmp_path.iterdir() if p.is_file()
    ]
    logs = [
        p.read_text(encoding="utf-8", errors="replace")
        for home in homes.values()
        for p in Path(home.env["MEMORIES_HOME"]).glob("*.log")
    ]
    for text in shipped + logs + [o for home in homes.values() for o in home.outputs]:
        assert CANARY not in text
        for secret in leaked:
            assert secret not in text
