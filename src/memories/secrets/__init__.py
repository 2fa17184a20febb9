"""Secrets agents and scripts can use without seeing them.

::

    otp.py           RFC 6238 / 4226 codes and otpauth:// URIs, through pyotp
    protected.py     protected-card input: validation into a credential and its card
    placeholders.py  {{secret:LABEL}} markers and exact-match replacement
    domain.py        Secrets: the operations over the vault domain (one commit each)
    keys.py          generated SSH / TLS keys behind a protected card; their public half
    runner.py        the daemon running a program with secrets in its environment (no shell)
                     on the terminal the CLI hands over, and the CLI's end of that channel
    clipboard.py     front-end side: the system clipboard, and the timed clear helper
    fileexec.py      front-end side: a private temporary file for one program run

Nothing here decides who may ask: the service authorizes and records each delivery intent
before a value leaves it. ``clipboard`` and ``fileexec`` import nothing of the vault (the CLI
uses them on what the service delivered).
"""

from memories.secrets.domain import OtpCode, Protected, SecretRef, Secrets
from memories.secrets.otp import OtpSecret, parse_otp
from memories.secrets.placeholders import marker, markers_in, replace_exact, resolve_markers
from memories.secrets.protected import PROTECTED_KINDS, ProtectedInput, ProtectedKind

__all__ = [
    "PROTECTED_KINDS",
    "OtpCode",
    "OtpSecret",
    "Protected",
    "ProtectedInput",
    "ProtectedKind",
    "SecretRef",
    "Secrets",
    "marker",
    "markers_in",
    "parse_otp",
    "replace_exact",
    "resolve_markers",
]
