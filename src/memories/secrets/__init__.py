"""Secrets agents and scripts can use without seeing them.

::

    otp.py           RFC 6238 / 4226 codes and otpauth:// URIs, through pyotp
    protected.py     protected-card input: validation into a credential and its card
    placeholders.py  {{secret:LABEL}} markers and exact-match replacement
    domain.py        Secrets: the operations over the vault domain (one commit each)
    runner.py        running a program with secrets in its environment (no shell)

Nothing here decides who may ask: the service authorizes and records each delivery intent
before a value leaves it.
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
