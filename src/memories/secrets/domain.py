"""The secret operations over the vault domain: protected cards, OTP codes, protected text and
the values a program run receives.

:class:`Secrets` wraps the :class:`~memories.vault.Vaults` of an unlocked store. It never decides
who may ask (the service does, before calling it) and never returns a value on its own: the
methods that hand out plaintext (:meth:`Secrets.value`, :meth:`Secrets.otp_code`) are called by
handlers that record the delivery intent first. Writes commit the credential and whatever refers
to it in one checkpoint (:meth:`~memories.vault.edit.Editing.write_batch`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from memories.crypto import new_id
from memories.errors import ConflictError, DeniedError, NotFoundError, UsageError
from memories.secrets.otp import OtpSecret, OtpType, stored_otp
from memories.secrets.placeholders import replace_exact
from memories.secrets.protected import ProtectedInput, check_label, protected_contents
from memories.vault import Content, Saved, Vaults, make_content
from memories.vault.content import SECRET_LABEL
from memories.vault.edit import PROTECTED_CARD, Write

__all__ = ["KEY_KINDS", "OtpCode", "Protected", "SecretRef", "Secrets"]

#: Protected-card kinds whose credential is a private key: never delivered as a value.
KEY_KINDS: Final = frozenset({"ssh_key", "certificate"})

_NO_LABEL: Final = (
    "no protected card has that label or id; `memories ls --card-type protected_card`"
)


@dataclass(frozen=True)
class SecretRef:
    """A credential a secret operation resolved, and the protected card it came through."""

    credential_id: str
    vault_id: str
    card_id: str | None = None
    label: str | None = None
    kind: str | None = None  # the card's kind (password, token, totp, hotp, ...)
    env: str | None = None


@dataclass(frozen=True)
class Protected:
    """What :meth:`Secrets.create_protected` saved."""

    card: Saved
    credential: Saved
    label: str


@dataclass(frozen=True, repr=False)
class OtpCode:
    """A code to hand out once its intent is durable; the repr never shows it."""

    code: str
    type: str
    seconds_left: int | None
    counter: int | None  # the HOTP counter the code was made with

    def __repr__(self) -> str:
        return f"OtpCode(type={self.type!r})"


class Secrets:
    """Secret operations over ``vaults``. Every method raises ``LockedError`` once locked."""

    def __init__(self, vaults: Vaults) -> None:
        self.vaults = vaults

    # -- resolution --------------------------------------------------------------------------

    def _protected_cards(self, elevated: bool) -> Iterable[tuple[str, Content]]:
        vaults = self.vaults
        for summary in vaults.list_assets(
            kind="card", card_type=PROTECTED_CARD, elevated=elevated, all_vaults=True
        ):
            if summary.conflicted:
                continue
            yield summary.id, vaults.current_content(summary.id)[1]

    def label_taken(self, label: str) -> bool:
        """Whether a live protected card (private ones included) has ``label``."""
        return any(c.metadata.get("label") == label for _, c in self._protected_cards(True))

    def _ref_of_card(self, card_id: str, content: Content) -> SecretRef:
        meta = content.metadata
        credential = meta.get("credential_ref")
        if not isinstance(credential, str):
            raise NotFoundError("that protected card has no credential")
        state = self.vaults.resolve_asset(card_id)
        return SecretRef(
            credential_id=credential,
            vault_id=state.vault_id,
            card_id=card_id,
            label=_text(meta.get("label")),
            kind=_text(meta.get("kind")),
            env=_text(meta.get("env")),
        )

    def find(self, ref: str, *, elevated: bool) -> SecretRef:
        """The credential ``ref`` names: a protected card's label, a protected card's id or a
        credential's id (labels win when both could match).

        Raises:
            NotFoundError: nothing visible matches (deleted, private while not elevated).
            UsageError: a prefix is ambiguous, or the asset is neither a protected card nor a
                credential.
            ConflictError: the card has several heads.
        """
        if SECRET_LABEL.fullmatch(ref):
            for card_id, content in self._protected_cards(elevated):
                if content.metadata.get("label") == ref:
                    return self._ref_of_card(card_id, content)
        try:
            state, content = self.vaults.current_content(ref)
        except (NotFoundError, UsageError):
            raise NotFoundError(_NO_LABEL) from None
        if state.private and not elevated:
            raise NotFoundError(_NO_LABEL)
        if state.kind == "credential":
            # Reached directly, a credential still answers to the card in front of it (so a
            # generated private key stays undeliverable by its id too).
            for card_id, card in self._protected_cards(elevated=True):
                if card.metadata.get("credential_ref") == state.asset_id:
                    return self._ref_of_card(card_id, card)
            return SecretRef(credential_id=state.asset_id, vault_id=state.vault_id)
        if state.kind == "card" and content.card_type == PROTECTED_CARD:
            return self._ref_of_card(state.asset_id, content)
        raise UsageError("that asset is neither a protected card nor a credential")

    @staticmethod
    def require_deliverable(found: SecretRef) -> None:
        """Refuse to hand out a private key: keys are used by the daemon, never returned.

        Raises:
            DeniedError: the card in front of the credential holds an SSH or TLS private key.
        """
        if found.kind in KEY_KINDS:
            raise DeniedError(
                "that credential is a private key; it is never handed out "
                "(`memories credential public` shows its public half)"
            )

    def value(self, found: SecretRef) -> str:
        """The current value of the credential ``found`` names. The caller audits first.

        Raises:
            NotFoundError: the credential is gone or the reference names another kind.
            ConflictError: the credential has several heads.
        """
        try:
            state, content = self.vaults.current_content(found.credential_id)
        except (NotFoundError, UsageError):
            raise NotFoundError("the credential this card refers to is gone") from None
        if state.kind != "credential":
            raise NotFoundError("the credential this card refers to is gone")
        return content.body

    # -- writes ------------------------------------------------------------------------------

    def create_protected(
        self,
        vault: str | None,
        title: str,
        given: ProtectedInput,
        *,
        tags: Iterable[str] = (),
        private: bool = False,
        details: Mapping[str, str | int],
    ) -> Protected:
        """Write a credential and its protected card in one commit.

        Raises:
            UsageError: invalid input (see :func:`protected_contents`).
            ConflictError: another live protected card has the label already.
        """
        label = check_label(given.label)
        if self.label_taken(label):
            raise ConflictError("a protected card with that label exists already")
        credential_id, card_id = new_id(), new_id()
        credential, card = protected_contents(
            given, credential_id=credential_id, title=title, tags=tags, private=private
        )
        credential_saved, card_saved = self.vaults.write_batch(
            [
                Write(credential_id, "credential", credential, new=True, vault=vault),
                Write(card_id, "card", card, new=True, vault=vault),
            ],
            "secret.protect",
            {**details, "asset": card_id, "credential": credential_id},
        )
        return Protected(card=card_saved, credential=credential_saved, label=label)

    def otp_code(
        self,
        found: SecretRef,
        *,
        details: Mapping[str, str | int],
        now: float | None = None,
    ) -> OtpCode:
        """The OTP code of ``found``. For HOTP the credential's counter is advanced, with a
        checkpoint of ``details`` as the delivery intent, in one commit before the code is
        made: a crash after it never hands out the same code twice. A TOTP code commits
        nothing; its caller records the intent.

        Raises:
            UsageError: the card is not an OTP card or its credential holds no OTP secret.
            NotFoundError, ConflictError: as :meth:`value`.
        """
        if found.kind not in ("totp", "hotp"):
            raise UsageError("that protected card does not hold a TOTP or HOTP secret")
        otp_type: OtpType = "totp" if found.kind == "totp" else "hotp"
        otp = stored_otp(self.value(found), otp_type)
        if otp.type == "hotp":
            self._advance(found, otp, details)
        return OtpCode(
            code=otp.code(now),
            type=otp.type,
            seconds_left=otp.seconds_left(now),
            counter=otp.counter if otp.type == "hotp" else None,
        )

    def _advance(self, found: SecretRef, otp: OtpSecret, details: Mapping[str, str | int]) -> None:
        state, content = self.vaults.current_content(found.credential_id)
        advanced = make_content(
            "credential",
            title=content.title,
            body=otp.advanced().uri(),
            tags=content.tags,
            source=content.source,
            private=content.private,
        )
        self.vaults.write_batch(
            [Write(state.asset_id, "credential", advanced, new=False)],
            "otp.advance",
            {**details, "asset": state.asset_id},
        )

    def protect(
        self,
        ref: str,
        secret: str,
        label: str,
        *,
        elevated: bool,
        details: Mapping[str, str | int],
    ) -> tuple[Saved, Saved, int]:
        """Replace every exact occurrence of ``secret`` in the body of ``ref`` (a memory or card)
        with ``{{secret:LABEL}}`` and store the secret as a new credential, in one commit.

        Returns the edited asset's and the credential's ``Saved`` and how many occurrences
        were replaced. Older revisions keep their bodies (signed history is never rewritten).

        Raises:
            UsageError: a bad label, a label the asset maps already, an asset that is neither a
                memory nor a card, or a secret that does not occur in the body.
            DeniedError: the asset is private and the caller is not elevated.
            NotFoundError, ConflictError: as :meth:`~memories.vault.edit.Editing.current_content`.
        """
        label = check_label(label)
        state, content = self.vaults.current_content(ref)
        if state.private and not elevated:
            raise DeniedError("this memory is private; run `memories sudo` first")
        if state.kind not in ("memory", "card"):
            raise UsageError("only a memory's or a card's body can hold secret placeholders")
        if label in content.secrets:
            raise UsageError("that asset maps this label already; choose another label")
        body, count = replace_exact(content.body, secret, label)
        credential_id = new_id()
        credential = make_content(
            "credential",
            title=f"{content.title} ({label})",
            body=secret,
            private=content.private,
        )
        record = self.vaults.resolve_vault(state.vault_id)
        card_type = record.card_types.get(content.card_type or "") if content.card_type else None
        edited = make_content(
            state.kind,
            title=content.title,
            body=body,
            tags=content.tags,
            source=content.source,
            card_type=content.card_type,
            metadata=dict(content.metadata) if state.kind == "card" else None,
            private=content.private,
            card_type_def=card_type,
            secrets={**content.secrets, label: credential_id},
        )
        credential_saved, saved = self.vaults.write_batch(
            [
                Write(credential_id, "credential", credential, new=True, vault=state.vault_id),
                Write(state.asset_id, state.kind, edited, new=False),
            ],
            "secret.protect",
            {**details, "asset": state.asset_id, "credential": credential_id},
        )
        return saved, credential_saved, count


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
