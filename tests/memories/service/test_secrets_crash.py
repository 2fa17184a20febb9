"""An HOTP code is never handed out twice, even when the process dies right after the commit
that advanced its counter (SIGKILL between the delivery intent and the return)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable

from memories.service import Service
from tests.memories.service.support import PASSWORD, call, sudo

OTP_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  # base32 of the RFC 4226 test key

# Runs in a child process: makes an HOTP card, then asks for a code with the code step
# replaced by SIGKILL, so the process dies after the counter commit and before any return.
CHILD = textwrap.dedent(
    f"""
    import os, signal
    from memories.config import load_settings
    from memories.secrets.otp import OtpSecret
    from memories.service import Service, parse_request
    from tests.memories.service.support import CLI1, FAST, PASSWORD

    service = Service(load_settings(), kdf_cost=FAST)
    def call(data):
        return service.handle(parse_request(data), CLI1)
    call({{"op": "init", "password": PASSWORD}})
    call({{"op": "sudo", "password": PASSWORD}})
    call({{"op": "protected_card", "title": "hw", "label": "hw", "kind": "hotp",
           "secret": "{OTP_SECRET}"}})
    OtpSecret.code = lambda self, now=None: os.kill(os.getpid(), signal.SIGKILL)
    call({{"op": "otp_code", "ref": "hw"}})
    """
)


def test_a_crash_after_the_counter_commit_never_reuses_the_code(
    make_service: Callable[[], Service],
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, timeout=60, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    service = make_service()
    call(service, {"op": "unlock", "password": PASSWORD})
    sudo(service)
    assert call(service, {"op": "otp_code", "ref": "hw"})["code"] == "287082"  # counter 1
    actions = [e["action"] for e in call(service, {"op": "audit_list"})["entries"]]
    assert actions.count("otp.advance") == 2
