"""Process hardening, checked in a child so the test process itself stays as it was."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = r"""
import ctypes, json, resource, sys
from memories.daemon.hardening import harden_process
first = harden_process()
again = harden_process()  # idempotent
dumpable = None
if sys.platform.startswith("linux"):
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
print(json.dumps({"first": [first.not_dumpable, first.no_core_dumps], "same": first == again,
                  "dumpable": dumpable, "core": list(resource.getrlimit(resource.RLIMIT_CORE))}))
"""


def test_hardening_forbids_core_dumps_and_on_linux_makes_the_process_not_dumpable() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=30, check=True
    )
    report = json.loads(proc.stdout)
    assert report["core"] == [0, 0]
    assert report["same"] is True
    if sys.platform.startswith("linux"):
        assert report["first"] == [True, True]
        assert report["dumpable"] == 0
    else:
        assert report["first"] == [False, True]
