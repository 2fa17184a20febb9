"""Protected cards: the visible face of a credential, and the validation of what makes one.

:func:`protected_contents` turns a :class:`ProtectedInput` (a password for an account, a token,
a value for an environment variable, or a TOTP/HOTP secret, bare or as an ``otpauth://`` URI)
into the credential's content and the card's content, which the domain then commits together.
The card carries the credential's id (``credential_ref``), a stable ``label`` and the safe
facts (account, service, env, url, kind); the secret lives only in the credential's body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from memories.errors import UsageError
from memories.secrets.otp import OtpAlgorithm, parse_otp
from memories.vault.content import SECRET_LABEL, Content, make_content
from memories.vault.edit import PROTECTED_CARD

__all__ = [
    "PROTECTED_KINDS",
    "ProtectedInput",
    "ProtectedKind",
    "check_label",
    "protected_contents",
]

#: What a protected card may hold. ``env`` is a token for one environment variable.
ProtectedKind: TypeAlias = Literal["password", "token", "env", "totp", "hotp"]
PROTECTED_KINDS: Final[tuple[ProtectedKind, ...]] = ("password", "token", "env", "totp", "hotp")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MAX_SECRET_CHARS = 64 * 1024


def check_label(label: object) -> str:
    """A valid label, stripped. Raises ``UsageError`` naming the rule, never the text."""
    text = label.strip() if isinstance(label, str) else ""
    if not SECRET_LABEL.fullmatch(text):
        raise UsageError(
            "a label is 1 to 64 letters, digits or . _ - (starting with a letter or digit)"
        )
    return text


@dataclass(frozen=True, repr=False)
class ProtectedInput:
    """What the user gives for a protected card; the repr shows the kind and label only."""

    kind: ProtectedKind
    secret: str
    label: str
    account: str | None = None
    service: str | None = None
    env: str | None = None
    url: str | None = None
    digits: int | None = None
    algorithm: OtpAlgorithm | None = None
    period: int | None = None
    counter: int | None = None

    def __repr__(self) -> str:
        return f"ProtectedInput(kind={self.kind!r}, label={self.label!r})"


def protected_contents(
    given: ProtectedInput,
    *,
    credential_id: str,
    title: str,
    tags: Iterable[str] = (),
    private: bool = False,
) -> tuple[Content, Content]:
    """The credential's content and the card's content for ``given``.

    A TOTP/HOTP secret is normalized to the ``otpauth://`` URI the credential stores; its
    issuer and account fill the card's service and account when those are not given.

    Raises:
        UsageError: an unknown kind, a bad label or environment name, an empty or oversized
            secret, a malformed ``otpauth://`` URI or a non-base32 OTP secret, or a card field
            that does not fit (messages never quote the secret).
    """
    if given.kind not in PROTECTED_KINDS:
        raise UsageError("a protected card holds a password, token, env, totp or hotp secret")
    label = check_label(given.label)
    secret = given.secret
    if not isinstance(secret, str) or not secret.strip():
        raise UsageError("the secret is empty")
    if len(secret) > _MAX_SECRET_CHARS:
        raise UsageError(f"the secret is longer than {_MAX_SECRET_CHARS} characters")
    env = given.env.strip() if isinstance(given.env, str) and given.env.strip() else None
    if env is not None and not _ENV_NAME.fullmatch(env):
        raise UsageError("the environment name is letters, digits and _, not starting with a digit")
    if given.kind == "env" and env is None:
        raise UsageError("an env secret needs the name of its environment variable")
    account, service = given.account, given.service
    if given.kind in ("totp", "hotp"):
        otp = parse_otp(
            secret,
            given.kind,
            digits=given.digits,
            algorithm=given.algorithm,
            period=given.period,
            counter=given.counter,
            issuer=service,
            account=account,
        )
        value = otp.uri()
        account = account or otp.account
        service = service or otp.issuer
    else:
        if any(v is not None for v in (given.digits, given.algorithm, given.period, given.counter)):
            raise UsageError("digits, algorithm, period and counter apply to totp and hotp only")
        value = secret
    credential = make_content("credential", title=title, body=value, tags=tags, private=private)
    metadata: dict[str, object] = {
        "credential_ref": credential_id,
        "label": label,
        "kind": "token" if given.kind == "env" else given.kind,
    }
    for name, field_value in (
        ("account", account),
        ("service", service),
        ("env", env),
        ("url", given.url),
    ):
        if field_value:
            metadata[name] = field_value
    card = make_content(
        "card",
        title=title,
        tags=tags,
        card_type=PROTECTED_CARD,
        metadata=metadata,
        private=private,
    )
    return credential, card
