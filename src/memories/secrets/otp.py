"""One-time passwords: RFC 6238 (TOTP) and RFC 4226 (HOTP) through ``pyotp``.

An OTP credential stores its parameters as one ``otpauth://`` URI (the format authenticator
apps export), written by ``pyotp`` and read back with ``pyotp.parse_uri``; nothing here parses
a URI or computes a code by hand. An HOTP credential's URI carries the next counter, so the
counter moves by writing a new revision of the credential.

Every error says what is wrong with the input, never the secret or the URI.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias

import pyotp

from memories.errors import UsageError

__all__ = ["ALGORITHMS", "OtpAlgorithm", "OtpSecret", "OtpType", "is_otp_uri", "parse_otp"]

OtpType: TypeAlias = Literal["totp", "hotp"]
OtpAlgorithm: TypeAlias = Literal["SHA1", "SHA256", "SHA512"]
ALGORITHMS: Final[dict[OtpAlgorithm, Callable[..., hashlib._Hash]]] = {
    "SHA1": hashlib.sha1,
    "SHA256": hashlib.sha256,
    "SHA512": hashlib.sha512,
}
_BASE32 = re.compile(r"[A-Z2-7]+=*")
_MIN_SECRET_BYTES = 14  # 112 bits, the floor pyotp enforces; RFC 4226 asks for 128
_MAX_SECRET_BYTES = 128
_MAX_COUNTER = 2**53 - 1
_BAD_URI = "the otpauth:// URI is malformed; export it again from the service"


def is_otp_uri(value: str) -> bool:
    """Whether ``value`` looks like an ``otpauth://`` URI (it may still be malformed)."""
    return value.strip().lower().startswith("otpauth://")


@dataclass(frozen=True, repr=False)
class OtpSecret:
    """The parameters of one OTP credential. The repr shows the type only.

    Raises:
        UsageError: the secret is not base32 of 14 to 128 bytes, or a parameter is out of range
            (6 to 8 digits, a period of 1 to 300 seconds, a counter from 0 to 2**53 - 1).
    """

    type: OtpType
    secret: str  # base32, upper case, without padding
    digits: int = 6
    algorithm: OtpAlgorithm = "SHA1"
    period: int = 30
    counter: int = 0
    issuer: str | None = None
    account: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "secret", _normalize_secret(self.secret))
        if self.type not in ("totp", "hotp"):
            raise UsageError("an OTP is totp or hotp")
        if isinstance(self.digits, bool) or self.digits not in (6, 7, 8):
            raise UsageError("an OTP code has 6, 7 or 8 digits")
        if self.algorithm not in ALGORITHMS:
            raise UsageError("the OTP algorithm is SHA1, SHA256 or SHA512")
        if isinstance(self.period, bool) or not 1 <= self.period <= 300:
            raise UsageError("the TOTP period is 1 to 300 seconds")
        if isinstance(self.counter, bool) or not 0 <= self.counter <= _MAX_COUNTER:
            raise UsageError("the HOTP counter is a whole number from 0 to 2**53 - 1")

    def __repr__(self) -> str:
        return f"OtpSecret(type={self.type!r}, digits={self.digits})"

    def _otp(self) -> pyotp.TOTP | pyotp.HOTP:
        digest = ALGORITHMS[self.algorithm]
        name, issuer = self.account, self.issuer
        if self.type == "totp":
            return pyotp.TOTP(
                self.secret,
                digits=self.digits,
                digest=digest,
                name=name,
                issuer=issuer,
                interval=self.period,
            )
        return pyotp.HOTP(
            self.secret,
            digits=self.digits,
            digest=digest,
            name=name,
            issuer=issuer,
            initial_count=self.counter,
        )

    def uri(self) -> str:
        """The ``otpauth://`` URI that stores these parameters (what the credential holds)."""
        otp = self._otp()
        if isinstance(otp, pyotp.HOTP):
            return otp.provisioning_uri(initial_count=self.counter)
        return otp.provisioning_uri()

    def code(self, now: float | None = None) -> str:
        """The code: at time ``now`` (TOTP, default the current time) or at this counter
        (HOTP, which the caller must advance durably before handing the code out)."""
        otp = self._otp()
        if isinstance(otp, pyotp.HOTP):
            return otp.at(0)  # pyotp counts from initial_count, which is this counter
        return otp.at(int(time.time() if now is None else now))

    def seconds_left(self, now: float | None = None) -> int | None:
        """How long a TOTP code stays valid; None for HOTP."""
        if self.type != "totp":
            return None
        at = time.time() if now is None else now
        return self.period - int(at) % self.period

    def advanced(self) -> OtpSecret:
        """These parameters with the HOTP counter moved past the code just used."""
        return replace(self, counter=self.counter + 1)


def _normalize_secret(secret: object) -> str:
    if not isinstance(secret, str):
        raise UsageError("the OTP secret must be base32 text")
    text = re.sub(r"[\s-]", "", secret).upper()
    if not _BASE32.fullmatch(text):
        raise UsageError("the OTP secret is not base32 (letters A-Z and digits 2-7)")
    text = text.rstrip("=")
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raise UsageError("the OTP secret is not valid base32") from None
    if not _MIN_SECRET_BYTES <= len(raw) <= _MAX_SECRET_BYTES:
        raise UsageError(
            f"the OTP secret must decode to {_MIN_SECRET_BYTES} to {_MAX_SECRET_BYTES} bytes"
        )
    return text


def _algorithm_of(otp: pyotp.OTP) -> OtpAlgorithm:
    name = otp.digest().name.upper().replace("-", "")
    for algorithm in ALGORITHMS:
        if algorithm == name:
            return algorithm
    raise UsageError("the OTP algorithm is SHA1, SHA256 or SHA512")


def parse_otp(
    value: str,
    otp_type: OtpType,
    *,
    digits: int | None = None,
    algorithm: OtpAlgorithm | None = None,
    period: int | None = None,
    counter: int | None = None,
    issuer: str | None = None,
    account: str | None = None,
) -> OtpSecret:
    """OTP parameters from an ``otpauth://`` URI or a bare base32 secret.

    A URI brings its own parameters; the keyword arguments fill what it leaves out (and are
    the parameters of a bare secret). A URI of the other type than ``otp_type`` is refused.

    Raises:
        UsageError: a malformed URI, a secret that is not base32, or a parameter out of range
            (the message never quotes the secret or the URI).
    """
    if not isinstance(value, str) or not value.strip():
        raise UsageError("the OTP secret is empty")
    if not is_otp_uri(value):
        return OtpSecret(
            type=otp_type,
            secret=value,
            digits=6 if digits is None else digits,
            algorithm="SHA1" if algorithm is None else algorithm,
            period=30 if period is None else period,
            counter=0 if counter is None else counter,
            issuer=issuer,
            account=account,
        )
    try:
        otp = pyotp.parse_uri(value.strip())
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise UsageError(_BAD_URI) from None
    found: OtpType = "hotp" if isinstance(otp, pyotp.HOTP) else "totp"
    if found != otp_type:
        raise UsageError(f"that URI holds a {found.upper()} secret, not {otp_type.upper()}")
    return OtpSecret(
        type=found,
        secret=otp.secret,
        digits=otp.digits,
        algorithm=_algorithm_of(otp),
        period=otp.interval if isinstance(otp, pyotp.TOTP) else 30,
        counter=otp.initial_count if isinstance(otp, pyotp.HOTP) else 0,
        issuer=otp.issuer or issuer,
        account=otp.name or account,
    )


def stored_otp(value: str, otp_type: OtpType) -> OtpSecret:
    """The parameters a stored OTP credential holds.

    Raises:
        UsageError: the credential does not hold an OTP URI of ``otp_type``.
    """
    if not is_otp_uri(value):
        raise UsageError(f"that credential does not hold a {otp_type.upper()} secret")
    return parse_otp(value, otp_type)
