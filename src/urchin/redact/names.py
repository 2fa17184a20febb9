"""Which names hold secrets, and which values are secrets rather than code or placeholders.

Every name-anchored rule asks two questions here: does this name always hold a secret
(``DB_PASSWORD``, ``apiKey``, ``FCM_SERVER_KEY``; never ``public_key`` or ``token_count``),
and is this value one (``hunter2x``; never ``${DB_PASSWORD}``, ``~``, ``password`` passed
on as a variable, a ``SecretStr`` annotation, ``sk-...`` or an ``ssh-ed25519`` public key).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

__all__ = [
    "ASSIGN_NAMES",
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "ENTROPY_WORDS",
    "KEY_PREFIXES",
    "MARKER_PREFIX",
    "NAME_ENDINGS",
    "classify_value",
    "entropy_name",
    "is_code_value",
    "is_placeholder",
    "looks_random",
    "marker",
    "mixed",
    "plausible_secret",
    "secret_name_kind",
    "shannon_entropy",
]

MARKER_PREFIX = "[REDACTED:"

#: Shannon entropy (bits per character) a value must reach to count as random.
ENTROPY_THRESHOLD = 3.5
#: Shortest value the entropy rule considers.
ENTROPY_MIN_LENGTH = 20


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


# -- values that are not secrets ------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::?[-=?][^}\s]*)?\}?"  # $VAR, ${VAR}, ${VAR:-default}
    r"|\$\{\{[^{}\n]{0,80}\}\}"  # ${{ secrets.X }} (GitHub Actions)
    r"|\$\([^()\n]{0,120}\)"  # $(cat ~/.token)
    r"|%[A-Za-z_][A-Za-z0-9_]*%"  # %VAR%
    r"|%\([A-Za-z_]\w*\)[sd]"  # %(password)s
    r"|<[^<>\n]{0,64}>"  # <your-token>
    r"|\[[^\[\]\n]{0,40}\]"  # [your token]
    r"|\{\{[^{}\n]{0,80}\}\}"  # {{ secret }}
    r"|\{[A-Za-z_][\w.:\-]{0,40}\}"  # {password}, {env:TOKEN}
    r"|[*•.…#]+|[xX]{3,}|[-_]+"  # already masked
    r"|`[^`\n]{0,120}`"  # `command substitution`
)
# Values that are types, nulls, masks or stand-ins rather than secrets (`password: str`,
# `token: null`, `password: ~`, `API_KEY=your-api-key-here`).
_STOPWORDS = re.compile(
    r"null|none|nil|true|false|undefined|~|str|string|int|bytes|bool|any|optional|required"
    r"|secretstr|secretbytes|secret|password|passwd|pass|token|key|apikey|credentials?|auth"
    r"|empty|redacted|hidden|masked|omitted|removed|changeme|change[-_]?me|replace[-_]?me"
    r"|placeholder|example|sample|dummy|todo|tbd|fixme|unset|default|env|environment|prompt"
    r"|(?:your|my|insert|enter|replace|put|paste|add|set)[-_ ]?(?:own[-_ ]?)?[a-z_\- ]{0,30}"
    r"|[a-z_\-]{0,30}[-_](?:here|goes[-_]here|placeholder)",
    re.IGNORECASE,
)
# The words _STOPWORDS spells out, and what the rest of its alternatives start or end with:
# an ASCII value is looked up instead of matched (re.IGNORECASE folds some non-ASCII
# letters to ASCII ones, so any other value is matched).
_STOP_LITERALS = frozenset(
    [
        *("null", "none", "nil", "true", "false", "undefined", "~", "str", "string", "int"),
        *("bytes", "bool", "any", "optional", "required", "secretstr", "secretbytes"),
        *("secret", "password", "passwd", "pass", "token", "key", "apikey", "credential"),
        *("credentials", "auth", "empty", "redacted", "hidden", "masked", "omitted"),
        *("removed", "changeme", "change-me", "change_me", "replaceme", "replace-me"),
        *("replace_me", "placeholder", "example", "sample", "dummy", "todo", "tbd", "fixme"),
        *("unset", "default", "env", "environment", "prompt"),
    ]
)
_STOP_STARTS = ("your", "my", "insert", "enter", "replace", "put", "paste", "add", "set")
_STOP_ENDS = ("here", "placeholder")
# References to where a secret is kept, not the secret: op://, vault:, arn:...:secret, sops.
_REFERENCE = re.compile(
    r"(?:op|vault|secret|secrets|keyring|env|file|awssm|gcpsm|azkv|ref|sm)://\S*"
    r"|vault:[\w/.\-#]+|arn:aws:(?:secretsmanager|ssm|kms):\S+|ENC\[[^\]]*\]?"
    r"|projects/[\w\-]+/secrets/\S+|!(?:Ref|Sub|GetAtt|vault)\b.*",
    re.IGNORECASE,
)
# Public halves and publishable keys that look like secrets under a *_KEY name.
_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s"
    r"|age1[02-9ac-hj-np-z]{58}\b|npub1|pk_(?:live|test)_|pk\.eyJ|-----BEGIN (?:[A-Z]+ )?PUBLIC"
)
# Stand-in text inside a value: ghp_xxxxxxxx, xoxb-your-token, sk-<key>, token-goes-here.
_FILLER = re.compile(
    r"(?i:xxxx|\*\*\*\*|(?<![a-z])your[-_ ]|[-_ ](?:goes[-_ ])?here$|<[a-z][a-z_\- ]{1,30}>)"
)
_REFERENCE_STARTS = ("vault:", "arn:aws:", "enc[", "projects/", "!")
_PUBLIC_STARTS = ("ssh-", "ecdsa-", "sk-ssh-", "age1", "npub1", "pk_", "pk.", "-----BEGIN")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# Possessive: a run of word characters is always followed by ".", ":", "-", "(" or the end,
# so giving characters back never helps a match (and cannot make one slow).
_CODE_PATH = re.compile(r"[A-Za-z_]\w*+(?:(?:\.|::|->)[A-Za-z_]\w*+)++(?:\(\))?")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH_PREFIXES = ("/", "~/", "./", "../", "http://", "https://", "file://")
_PLACEHOLDER_STARTS = frozenset("$%<[{*•.…#xX`-_")
_TYPE_WORDS = frozenset(
    [
        "str",
        "string",
        "int",
        "bytes",
        "bool",
        "float",
        "dict",
        "list",
        "tuple",
        "optional",
        "any",
        "secretstr",
        "secretbytes",
        "object",
        "none",
        "self",
        "cls",
    ]
)
# Words a variable holding a secret is usually named after: `password=db_password`.
_VARIABLE_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "cfg", "conf")
_VARIABLE_WORD = re.compile("|".join(_VARIABLE_WORDS))
_DIGIT = re.compile("[0-9]")


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands in for a secret rather than being one (a variable, a mask,
    ``your-api-key-here``, a reference such as ``op://vault/item``, a truncated ``sk-...``,
    or a public key)."""
    stripped = value.strip()
    if not stripped or stripped.startswith(MARKER_PREFIX):
        return True
    if stripped.endswith(("...", "…")) or "${" in stripped or "{{" in stripped:
        return True
    if stripped[0] in _PLACEHOLDER_STARTS and _PLACEHOLDER.fullmatch(stripped) is not None:
        return True
    # Each expression below is tried only when a literal every match of it holds is there:
    # for an ASCII value, its lower-case form stands for re.IGNORECASE.
    if not stripped.isascii():
        return (
            (len(stripped) <= 48 and _STOPWORDS.fullmatch(stripped) is not None)
            or _FILLER.search(stripped) is not None
            or _REFERENCE.match(stripped) is not None
            or _PUBLIC.match(stripped + " ") is not None
        )
    lowered = stripped.lower()
    if len(stripped) <= 48 and (
        lowered in _STOP_LITERALS
        or (
            (lowered.startswith(_STOP_STARTS) or lowered.endswith(_STOP_ENDS))
            and _STOPWORDS.fullmatch(stripped) is not None
        )
    ):
        return True
    if (
        "xxxx" in lowered
        or "****" in stripped
        or "your" in lowered
        or "<" in stripped
        or lowered.endswith("here")
    ) and _FILLER.search(stripped) is not None:
        return True
    if ("://" in stripped or lowered.startswith(_REFERENCE_STARTS)) and _REFERENCE.match(
        stripped
    ) is not None:
        return True
    return stripped.startswith(_PUBLIC_STARTS) and _PUBLIC.match(stripped + " ") is not None


def is_code_value(name: str, value: str) -> bool:
    """Whether a bare ``value`` assigned to ``name`` reads as code passing a variable on
    (``password=password``, ``self.token = token``, ``password: _Secret``, ``Cfg.read``)."""
    # A code path holds one of ".", "::" and "->"; asking first skips the expression.
    if ("." in value or ":" in value or "->" in value) and _CODE_PATH.fullmatch(value) is not None:
        return not value.split(".")[-1][:1].isdigit()
    if _IDENTIFIER.fullmatch(value) is None:
        return False
    # From here the value is an ASCII identifier: letters, digits and "_".
    lowered = value.lower()
    tail, flat = _name_forms(name)
    if lowered in _TYPE_WORDS or value.startswith("_") or (tail and lowered == tail):
        return True
    if lowered == flat or lowered.replace("_", "") == flat:
        return True
    if _DIGIT.search(value) is not None:
        return False
    # A snake_case or camelCase word built on a secret word is a variable: db_password,
    # apiKey, self_token. A bare word alone (hunter, Summer) is left to the caller.
    rest = value[1:]
    return _VARIABLE_WORD.search(lowered) is not None and ("_" in value or rest != rest.lower())


@functools.lru_cache(maxsize=4096)
def _name_forms(name: str) -> tuple[str, str]:
    """A name's last word and the name without separators, lower-cased (asked per name)."""
    lowered = name.lower()
    tail = _NON_ALNUM.split(lowered.strip("\"'"))[-1] if name else ""
    return tail, _NAME_SEPARATORS.sub("", lowered)


def shannon_entropy(value: str) -> float:
    """Bits of entropy per character of ``value`` (0 for an empty string)."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def mixed(value: str) -> bool:
    """Whether ``value`` holds a digit, an upper-case and a lower-case letter."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def looks_random(value: str) -> bool:
    """Long, mixed upper/lower/digit and high entropy: how generated secrets look.

    Hex ids, UUIDs and git SHAs have no upper case (or no lower case), so they never pass;
    nor do paths, public keys and base64 ``data:`` URIs.
    """
    if len(value) < ENTROPY_MIN_LENGTH or value.startswith(_PATH_PREFIXES) or " " in value:
        return False
    if value.startswith(("data:", "sha256:", "sha512-", "sha384-", "sha1-")):
        return False
    return mixed(value) and shannon_entropy(value) >= ENTROPY_THRESHOLD


# -- secret-looking names -------------------------------------------------------------------

_NAME_SEPARATORS = re.compile(r"[_.\-\s\"'\[\]]")
# Words that, followed by "key", name a credential: apiKey, ACCESS_KEY, FCM_SERVER_KEY.
_KEY_WORDS = (
    "api|access|secret|signing|encryption|master|auth|client|account|app|license|subscription"
    "|application|server|service|admin|webhook|hmac|jwt|consumer|storage"
)
KEY_PREFIXES = tuple(_KEY_WORDS.split("|"))
_KEY_SUFFIXES = tuple(f"{prefix}key" for prefix in KEY_PREFIXES)
_PASS_NAME = re.compile(r"(?:^|[_.\-])(?:pass|pwd|pw|passcode)$")
# A name holding one of these is public by design, whatever it ends with.
_PUBLIC_NAME = re.compile(r"public|publishable|pubkey|(?:^|[_.\-])pub(?:$|[_.\-])|_pub_?key")
#: Words whose presence in a name lets a long random value count as a secret.
ENTROPY_WORDS = (
    "key",
    "secret",
    "token",
    "pass",
    "pwd",
    "credential",
    "auth",
    "private",
    "sig",
)


@functools.lru_cache(maxsize=4096)
def secret_name_kind(name: str) -> str | None:
    """The kind for a name whose value is always a secret (``DB_PASSWORD``, ``apiKey``), or None.

    ``token_count`` or ``password_hint`` are not secret names: the secret word must end the
    name; ``public_key`` and ``VAPID_PUBLIC_KEY`` never are.
    """
    lowered = name.strip().strip("\"'-[]").lower()
    if _PUBLIC_NAME.search(lowered):
        return None
    flat = _NAME_SEPARATORS.sub("", lowered)
    if flat.endswith("secretkeybase"):
        return "secret"
    if flat.endswith(("password", "passwd", "passphrase", "passcode")) or _PASS_NAME.search(
        lowered
    ):
        return "password"
    if flat.endswith("secretaccesskey") or ("aws" in flat and "secret" in flat):
        return "aws_secret"
    if flat.endswith("privatekey"):
        return "private_key"
    if flat.endswith(_KEY_SUFFIXES) or flat == "apikey":
        return "api_key"
    if flat.endswith("secret"):
        return "secret"
    if flat.endswith("token"):
        return "token"
    if flat.endswith(("credential", "credentials", "creds")):
        return "credential"
    return None


def entropy_name(name: str) -> bool:
    """Whether ``name`` holds a word that lets a long random value count as a secret."""
    lowered = name.lower()
    return _PUBLIC_NAME.search(lowered) is None and any(w in lowered for w in ENTROPY_WORDS)


def classify_value(
    name: str, value: str, *, quoted: bool = True, prose: bool = False
) -> str | None:
    """The kind to redact ``value`` as when it is assigned to ``name``, or None to keep it.

    ``quoted`` says the value was quoted (so it is surely a value); ``prose`` says an unquoted
    value sits in running text (``password: reset it``), where only secret-shaped values count.
    """
    if is_placeholder(value):
        return None
    kind = secret_name_kind(name)
    if kind is not None and plausible_secret(value, kind, quoted=quoted, prose=prose, name=name):
        return kind
    if entropy_name(name) and looks_random(value.strip()):
        return kind or "secret"
    return None


def plausible_secret(value: str, kind: str, *, quoted: bool, prose: bool, name: str = "") -> bool:
    """Whether ``value``, assigned to a name of ``kind``, is a secret rather than a count, a
    path, code or (in running text) a word."""
    stripped = value.strip()
    if kind != "password" and stripped.isdigit():
        return False  # max_token=100, key=3
    if quoted:
        return True
    if stripped.startswith(_PATH_PREFIXES) or is_code_value(name, stripped):
        return False  # token=args.token, SSH_KEY=/home/me/.ssh/id_rsa, password=password
    if prose:
        return not stripped.isalpha()
    return True


#: Words that end a name whose value is always a secret.
NAME_ENDINGS = "password|passwd|passphrase|passcode|pass|pwd|pw|secret|token|credentials?|creds"
#: The names the explicit-assignment rule starts with, folded.
ASSIGN_NAMES = frozenset(
    NAME_ENDINGS.replace("credentials?", "credential|credentials").split("|")
) | {f"{prefix}{sep}key" for prefix in KEY_PREFIXES for sep in ("", "_", ".", "-")}
