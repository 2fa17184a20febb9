"""Generated key material: an SSH or TLS private key stored as a credential behind a protected
card, and the public half derived from it on request.

The private key is written once, in the commit that creates its card, and never returned by
any request: :data:`~memories.secrets.domain.KEY_KINDS` marks the card so copy and run refuse
it. :func:`public_part` reads the stored key only to derive the ``authorized_keys`` line, the
certificate or the CSR (the recipes live in :mod:`memories.crypto.keys`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from memories.crypto import new_id
from memories.crypto.keys import (
    PublicPart,
    SshKeyType,
    TlsKeyType,
    generate_ssh,
    generate_tls,
    public_of,
)
from memories.errors import ConflictError, UsageError
from memories.secrets.domain import KEY_KINDS, Protected, SecretRef, Secrets
from memories.secrets.protected import check_label
from memories.vault import make_content
from memories.vault.edit import PROTECTED_CARD, Write

__all__ = ["KeyKind", "KeySpec", "default_label", "generate_key", "public_part"]

KeyKind: TypeAlias = Literal["ssh", "tls"]
_CARD_KIND: dict[KeyKind, str] = {"ssh": "ssh_key", "tls": "certificate"}


@dataclass(frozen=True)
class KeySpec:
    """What to generate. ``key_type`` is ed25519/rsa (SSH) or ecdsa/rsa/ed25519 (TLS)."""

    kind: KeyKind
    key_type: str | None = None
    bits: int | None = None
    common_name: str | None = None  # TLS: defaults to the title
    names: Sequence[str] = ()  # TLS: subject alternative names
    days: int = 365
    csr: bool = False


def default_label(title: str) -> str:
    """A label made from ``title``: lower case, runs of other characters as ``-``."""
    slug = re.sub(r"[^a-z0-9_.]+", "-", title.lower()).strip("-._")[:64].rstrip("-._")
    return slug or "key"


def _material(spec: KeySpec, title: str) -> str:
    if spec.kind == "ssh":
        if spec.common_name or spec.names or spec.csr:
            raise UsageError("common name, names and --csr apply to TLS keys only")
        ssh_type: SshKeyType = "rsa" if spec.key_type == "rsa" else "ed25519"
        if spec.key_type not in (None, "ed25519", "rsa"):
            raise UsageError("an SSH key is ed25519 or rsa")
        return generate_ssh(ssh_type, bits=spec.bits)
    if spec.kind == "tls":
        if spec.key_type not in (None, "ecdsa", "rsa", "ed25519"):
            raise UsageError("a TLS key is ecdsa, rsa or ed25519")
        tls_type: TlsKeyType = spec.key_type or "ecdsa"  # type: ignore[assignment]
        return generate_tls(
            spec.common_name or title,
            key_type=tls_type,
            bits=spec.bits,
            names=spec.names,
            days=spec.days,
            csr=spec.csr,
        )
    raise UsageError("a generated key is ssh or tls")


def generate_key(
    secrets: Secrets,
    vault: str | None,
    title: str,
    spec: KeySpec,
    *,
    label: str | None,
    tags: Iterable[str] = (),
    private: bool = False,
    details: Mapping[str, str | int],
) -> tuple[Protected, PublicPart]:
    """Generate a key, store it as a credential with its protected card (one commit), and
    return what was saved and the key's public half.

    Raises:
        UsageError: bad parameters (see :mod:`memories.crypto.keys`) or a bad label.
        ConflictError: a live protected card has the label already.
    """
    label = check_label(label if label is not None else default_label(title))
    if secrets.label_taken(label):
        raise ConflictError("a protected card with that label exists already; pass --label")
    material = _material(spec, title)
    public = public_of(material, comment=label if spec.kind == "ssh" else None)
    credential_id, card_id = new_id(), new_id()
    credential = make_content("credential", title=title, body=material, tags=tags, private=private)
    metadata: dict[str, object] = {
        "credential_ref": credential_id,
        "label": label,
        "kind": _CARD_KIND[spec.kind],
    }
    what = {"ssh_public_key": "SSH key", "certificate": "TLS key", "csr": "TLS key"}[public.form]
    card = make_content(
        "card",
        title=title,
        body=f"{what} ({public.algorithm}), fingerprint {public.fingerprint}",
        tags=tags,
        card_type=PROTECTED_CARD,
        metadata=metadata,
        private=private,
    )
    credential_saved, card_saved = secrets.vaults.write_batch(
        [
            Write(credential_id, "credential", credential, new=True, vault=vault),
            Write(card_id, "card", card, new=True, vault=vault),
        ],
        "secret.protect",  # a credential and its protected card, like protected_card
        {**details, "asset": card_id, "credential": credential_id, "kind": spec.kind},
    )
    return Protected(card=card_saved, credential=credential_saved, label=label), public


def public_part(secrets: Secrets, found: SecretRef) -> PublicPart:
    """The public half of the key ``found`` names.

    Raises:
        IntegrityError: the credential holds no key material this can read.
        NotFoundError, ConflictError: as :meth:`Secrets.value`.
    """
    comment = found.label if found.kind in KEY_KINDS and found.kind == "ssh_key" else None
    return public_of(secrets.value(found), comment=comment)
