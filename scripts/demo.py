"""End-to-end demo of what exists, in a throwaway home directory.

Run through `make demo`. Never touches the real ~: HOME and the XDG folders point at
a temporary folder that is deleted afterwards (set KEEP_DEMO=1 to keep it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent


def step(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m", flush=True)


def urchin(*args: str, input: str | None = None, check: bool = True) -> str:
    print(f"$ urchin {' '.join(args)}", flush=True)
    proc = subprocess.run(
        [str(BIN / "urchin"), *args],
        input=input,
        text=True,
        capture_output=True,
        check=False,
    )
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if check and proc.returncode != 0:
        raise SystemExit(f"demo step failed: urchin {' '.join(args)} (exit {proc.returncode})")
    return proc.stdout


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="urchin-demo-"))
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local/state"),
        COLUMNS=os.environ.get("COLUMNS", "120"),
    )
    for name in list(os.environ):
        if name.startswith("URCHIN_"):
            del os.environ[name]
    project = home / "dev" / "webshop"
    project.mkdir(parents=True)
    print(f"demo home: {home}")
    try:
        step("Record a few events")
        urchin(
            "ingest",
            "Fixed the flaky checkout test",
            "--source",
            "claude",
            "--workspace",
            str(project),
            "--tag",
            "tests",
        )
        urchin(
            "ingest",
            "pytest -x tests/test_checkout.py",
            "--source",
            "shell",
            "--kind",
            "command",
            "--workspace",
            str(project),
        )
        urchin(
            "ingest",
            "Use Postgres advisory locks for the job queue",
            "--source",
            "cli",
            "--kind",
            "decision",
            "--workspace",
            str(project),
            "--title",
            "job queue locks",
        )
        urchin(
            "ingest",
            "-",
            "--source",
            "notes",
            "--no-workspace",
            input="Read about CRDTs\nfollow up on sync design\n",
        )

        step("Read them back")
        urchin("recent", "-n", "10")
        urchin("query", "checkout")
        urchin("query", "LOCKS", "--json")

        step("Ephemeral mode discards writes")
        urchin("ephemeral", "start")
        urchin("ingest", "this is never written")
        urchin("ephemeral", "end")

        step("Health check")
        urchin("doctor")
    finally:
        if os.environ.get("KEEP_DEMO"):
            print(f"\nkept demo home: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
