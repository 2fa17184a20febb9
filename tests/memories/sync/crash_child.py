"""Run sync passes over one replica until told to stop (or killed): the SIGKILL tests' child.

Usage: python -m tests.memories.sync.crash_child STORE FOLDER
Prints "pass" after each completed pass, so the parent knows it is running.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memories.sync.transports import FolderTransport
from tests.memories.sync.support import replica, sync_once


def main() -> None:
    store, folder = Path(sys.argv[1]), FolderTransport(Path(sys.argv[2]))
    with replica(store) as vaults:
        while True:
            sync_once(vaults, folder)
            sys.stdout.write("pass\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
