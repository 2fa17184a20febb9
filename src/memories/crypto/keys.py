"""Key material users keep as credentials: SSH keys and TLS keys with a certificate or CSR.

Recipes over ``cryptography`` (this package is the only importer of its hazmat layer):

- :func:`generate_ssh` makes an Ed25519 or RSA (3072 to 8192 bits) key and returns the
  private key in OpenSSH format (unencrypted: it is stored inside the vault's encryption);
- :func:`generate_tls` makes an ECDSA P-256, RSA or Ed25519 key with a self-signed
  certificate or a certificate signing request, as PEM;
- :func:`public_of` derives what may be shown from that stored text: the ``authorized_keys``
  line and SHA-256 fingerprint (as ``ssh-keygen -l`` prints it) of an SSH key, or the PEM
  certificate / CSR and its SHA-256 fingerprint.

Failures raise :class:`~memories.errors.UsageError` (bad parameters) or
:class:`~memories.errors.IntegrityError` (stored material that does not parse); messages never
quote key material.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import NameOID

from memories.errors import IntegrityError, UsageError

__all__ = [
    "PublicPart",
    "SshKeyType",
    "SshSigner",
    "TlsKeyType",
    "generate_ssh",
    "generate_tls",
    "public_of",
    "ssh_fingerprint",
]

SshKeyType: TypeAlias = Literal["ed25519", "rsa"]
TlsKeyType: TypeAlias = Literal["ecdsa", "rsa", "ed25519"]
MIN_RSA_BITS: Final = 3072
MAX_RSA_BITS: Final = 8192
_MAX_DAYS: Final = 3650
_COMMENT = re.compile(r"[\x21-\x7e][\x20-\x7e]{0,199}")
_DNS_NAME = re.compile(r"(?=.{1,253}$)(\*\.)?([A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}\.?")
_OPENSSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----"
_PEM_BLOCK = re.compile(
    r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n[A-Za-z0-9+/=\r\n]+-----END \1-----\r?\n?"
)

_TlsKey: TypeAlias = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


@dataclass(frozen=True)
class PublicPart:
    """What may be shown of a stored key: never the private half."""

    kind: Literal["ssh", "tls"]
    text: str  # the authorized_keys line, or the PEM certificate / CSR
    fingerprint: str  # SHA256:<base64> (SSH) or sha256:<hex> of the DER (TLS)
    algorithm: str
    form: Literal["ssh_public_key", "certificate", "csr"]


def _rsa_bits(bits: int | None) -> int:
    bits = 4096 if bits is None else bits
    if not MIN_RSA_BITS <= bits <= MAX_RSA_BITS or bits % 8:
        raise UsageError(f"an RSA key has {MIN_RSA_BITS} to {MAX_RSA_BITS} bits (a multiple of 8)")
    return bits


def ssh_fingerprint(blob: bytes) -> str:
    """The SHA-256 fingerprint of an SSH public key blob, as ``ssh-keygen -l`` prints it."""
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def generate_ssh(key_type: SshKeyType = "ed25519", *, bits: int | None = None) -> str:
    """A new SSH private key in OpenSSH format.

    Raises:
        UsageError: an unknown type, or RSA bits outside 3072..8192 (or bits for Ed25519).
    """
    key: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
    if key_type == "ed25519":
        if bits is not None:
            raise UsageError("an Ed25519 key has no size; leave out the bits")
        key = ed25519.Ed25519PrivateKey.generate()
    elif key_type == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=_rsa_bits(bits))
    else:
        raise UsageError("an SSH key is ed25519 or rsa")
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode("ascii")


def _tls_key(key_type: TlsKeyType, bits: int | None) -> _TlsKey:
    if key_type == "ecdsa":
        if bits is not None:
            raise UsageError("an ECDSA key uses the P-256 curve; leave out the bits")
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=_rsa_bits(bits))
    if key_type == "ed25519":
        if bits is not None:
            raise UsageError("an Ed25519 key has no size; leave out the bits")
        return ed25519.Ed25519PrivateKey.generate()
    raise UsageError("a TLS key is ecdsa, rsa or ed25519")


def _alt_names(names: Sequence[str]) -> list[x509.GeneralName]:
    found: list[x509.GeneralName] = []
    for name in names:
        try:
            found.append(x509.IPAddress(ipaddress.ip_address(name)))
            continue
        except ValueError:
            pass
        if not _DNS_NAME.fullmatch(name):
            raise UsageError("a subject name is a DNS name or an IP address")
        found.append(x509.DNSName(name))
    return found


def generate_tls(
    common_name: str,
    *,
    key_type: TlsKeyType = "ecdsa",
    bits: int | None = None,
    names: Sequence[str] = (),
    days: int = 365,
    csr: bool = False,
    now: datetime.datetime | None = None,
) -> str:
    """A new TLS private key (PKCS#8 PEM) followed by a self-signed certificate, or by a
    certificate signing request when ``csr`` is set. ``names`` become subject alternative
    names (DNS names or IP addresses); the common name is added as one when none is given.

    Raises:
        UsageError: an empty or overlong common name, a bad name, a bad key type or size, or a
            validity outside 1..3650 days.
    """
    common_name = common_name.strip()
    if not 0 < len(common_name) <= 64:
        raise UsageError("a certificate's common name is 1 to 64 characters")
    if not 0 < days <= _MAX_DAYS:
        raise UsageError(f"a certificate is valid for 1 to {_MAX_DAYS} days")
    key = _tls_key(key_type, bits)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    alt = _alt_names(list(names) or ([common_name] if _DNS_NAME.fullmatch(common_name) else []))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    if csr:
        builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
        if alt:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        public_pem = builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM)
    else:
        start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if alt:
            cert = cert.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        public_pem = cert.sign(key, algorithm).public_bytes(serialization.Encoding.PEM)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return (private_pem + public_pem).decode("ascii")


def _algorithm_name(public: object) -> str:
    if isinstance(public, ed25519.Ed25519PublicKey):
        return "ed25519"
    if isinstance(public, rsa.RSAPublicKey):
        return f"rsa-{public.key_size}"
    if isinstance(public, ec.EllipticCurvePublicKey):
        return f"ecdsa-{public.curve.name}"
    return "unknown"


def public_of(stored: str, *, comment: str | None = None) -> PublicPart:
    """The public half of key material made by :func:`generate_ssh` or :func:`generate_tls`
    (or imported in the same formats). ``comment`` ends the ``authorized_keys`` line.

    Raises:
        UsageError: the comment is not one line of printable ASCII.
        IntegrityError: the stored text is not an OpenSSH private key, nor a PEM bundle with a
            certificate or a certificate signing request.
    """
    if comment is not None and not _COMMENT.fullmatch(comment):
        raise UsageError("an SSH key comment is one line of printable ASCII (200 at most)")
    if stored.lstrip().startswith(_OPENSSH_KEY):
        try:
            key = serialization.load_ssh_private_key(stored.encode("ascii"), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm, UnicodeError) as exc:
            raise IntegrityError("the stored SSH key does not parse") from exc
        public = key.public_key()
        line = public.public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        ).decode("ascii")
        blob = base64.b64decode(line.split()[1])
        if comment:
            line = f"{line} {comment}"
        return PublicPart(
            "ssh", line, ssh_fingerprint(blob), _algorithm_name(public), "ssh_public_key"
        )
    for match in _PEM_BLOCK.finditer(stored):
        label, block = match.group(1), match.group(0).encode("ascii")
        try:
            if label == "CERTIFICATE":
                cert = x509.load_pem_x509_certificate(block)
                der = cert.public_bytes(serialization.Encoding.DER)
                pem = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
                name = _algorithm_name(cert.public_key())
                return PublicPart("tls", pem, _sha256(der), name, "certificate")
            if label == "CERTIFICATE REQUEST":
                request = x509.load_pem_x509_csr(block)
                der = request.public_bytes(serialization.Encoding.DER)
                pem = request.public_bytes(serialization.Encoding.PEM).decode("ascii")
                name = _algorithm_name(request.public_key())
                return PublicPart("tls", pem, _sha256(der), name, "csr")
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise IntegrityError("the stored certificate does not parse") from exc
    raise IntegrityError(
        "the credential holds no SSH key, certificate or certificate signing request"
    )


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


# SSH agent sign-request flags that ask for an RSA signature over SHA-256 / SHA-512.
_RSA_SHA2_256: Final = 2
_RSA_SHA2_512: Final = 4


class SshSigner:
    """Signs SSH authentication challenges with a stored Ed25519 or RSA private key, for an
    SSH agent that serves the key without ever writing or returning it.

    Raises:
        IntegrityError: the stored text is not an OpenSSH Ed25519 or RSA private key.
    """

    def __init__(self, stored: str, *, comment: str) -> None:
        try:
            key = serialization.load_ssh_private_key(stored.encode("ascii"), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm, UnicodeError) as exc:
            raise IntegrityError("the stored SSH key does not parse") from exc
        if not isinstance(key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
            raise IntegrityError("the stored SSH key is neither Ed25519 nor RSA")
        self._key: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey | None = key
        line = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        #: The public key in SSH wire form, as agents list it and servers name it.
        self.blob = base64.b64decode(line.split()[1])
        self.comment = comment

    def sign(self, data: bytes, flags: int) -> bytes | None:
        """The SSH signature blob over ``data``, or None when the request cannot be met (an
        RSA signature over SHA-1, which OpenSSH stopped accepting, or a forgotten key)."""
        key = self._key
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return _ssh_string(b"ssh-ed25519") + _ssh_string(key.sign(data))
        if isinstance(key, rsa.RSAPrivateKey):
            digest: hashes.HashAlgorithm
            if flags & _RSA_SHA2_512:
                name, digest = b"rsa-sha2-512", hashes.SHA512()
            elif flags & _RSA_SHA2_256:
                name, digest = b"rsa-sha2-256", hashes.SHA256()
            else:
                return None
            signature = key.sign(data, padding.PKCS1v15(), digest)
            return _ssh_string(name) + _ssh_string(signature)
        return None

    def forget(self) -> None:
        """Drop the key object (OpenSSL frees its memory once nothing else holds it)."""
        self._key = None


def _sha256(der: bytes) -> str:
    return "sha256:" + hashlib.sha256(der).hexdigest()
