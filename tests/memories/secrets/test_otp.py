"""OTP codes against the RFC 4226 / 6238 vectors, URI import and bad input."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from memories.errors import UsageError
from memories.secrets.otp import OtpSecret, parse_otp

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[2] / "vectors" / "otp.json").read_text(encoding="utf-8")
)


def b32(ascii_secret: str) -> str:
    return base64.b32encode(ascii_secret.encode("ascii")).decode("ascii")


def test_hotp_matches_rfc_4226_vectors() -> None:
    vec = VECTORS["hotp"]
    codes = [
        OtpSecret("hotp", b32(vec["secret_ascii"]), counter=counter).code()
        for counter in range(len(vec["codes"]))
    ]
    assert codes == vec["codes"]


@pytest.mark.parametrize("algorithm", ["SHA1", "SHA256", "SHA512"])
def test_totp_matches_rfc_6238_vectors(algorithm: str) -> None:
    vec = VECTORS["totp"]
    otp = parse_otp(
        b32(vec["secrets_ascii"][algorithm]),
        "totp",
        digits=vec["digits"],
        algorithm=algorithm,  # type: ignore[arg-type]
        period=vec["period"],
    )
    for case in vec["cases"]:
        assert otp.code(case["time"]) == case[algorithm]


def test_uri_round_trips_every_parameter() -> None:
    otp = OtpSecret(
        "hotp",
        b32("12345678901234567890"),
        digits=8,
        algorithm="SHA256",
        counter=41,
        issuer="Example",
        account="ada@example.com",
    )
    back = parse_otp(otp.uri(), "hotp")
    assert (back.secret, back.digits, back.algorithm, back.counter) == (otp.secret, 8, "SHA256", 41)
    assert (back.issuer, back.account) == ("Example", "ada@example.com")
    assert back.code() == otp.code()
    assert (
        parse_otp(otp.uri(), "hotp").advanced().code()
        == OtpSecret("hotp", otp.secret, digits=8, algorithm="SHA256", counter=42).code()
    )


def test_totp_uri_from_an_authenticator_export_is_imported() -> None:
    uri = (
        "otpauth://totp/Example:alice@example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DP"
        "&issuer=Example&period=60&digits=8"
    )
    otp = parse_otp(uri, "totp")
    assert (otp.period, otp.digits, otp.issuer, otp.account) == (
        60,
        8,
        "Example",
        "alice@example.com",
    )


CANARY = "JBSWY3DPEHPK3PX1JBSWY3DP"  # '1' is not base32


@pytest.mark.parametrize(
    ("value", "otp_type", "message"),
    [
        (CANARY, "totp", "not base32"),
        ("JBSWY3DP", "totp", "14 to 128 bytes"),
        ("otpauth://totp/x?secret=" + CANARY, "totp", "malformed"),
        ("otpauth://nonsense", "totp", "malformed"),
        ("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXPJBSWY3DP&counter=1", "totp", "not TOTP"),
    ],
)
def test_bad_otp_input_is_refused_without_quoting_it(
    value: str, otp_type: str, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        parse_otp(value, otp_type)  # type: ignore[arg-type]
    assert message in caught.value.message
    assert CANARY not in str(caught.value) and "JBSWY3DP" not in str(caught.value)


def test_repr_never_shows_the_secret() -> None:
    otp = OtpSecret("totp", "JBSWY3DPEHPK3PXPJBSWY3DP")
    assert "JBSWY3DP" not in repr(otp)
