"""Credentials in headers and URLs: ``Authorization:`` with any scheme, a bare
``Bearer <token>``, session cookies, and the password or key in a URL's user info
(``scheme://user:pass@host``, a Sentry DSN's ``https://<key>@host``)."""

from __future__ import annotations

import re

from urchin.redact.names import is_placeholder, looks_random, mixed
from urchin.redact.rules.base import (
    Decision,
    Guard,
    RegexRule,
    Rule,
    boundary,
    named_at,
    named_value,
    replace_decisions,
)
from urchin.redact.scan import Scan, bits

__all__ = ["HEADER_RULES"]

_AUTH_HEADER = re.compile(
    r"[Aa]" + boundary("[Aa]", r"A-Za-z0-9_") + r"(?i:uthorization)"
    r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?>(?P<scheme>[A-Za-z][A-Za-z0-9_\-]{1,31}+)[ \t]++)?"
    r"(?P<value>[^\s\"'\\,;`]{1,4096}+)"
)
_SCHEME_KINDS = {"bearer": "bearer", "token": "bearer", "basic": "basic_auth"}
_SCHEMES = frozenset(
    [
        "bearer",
        "basic",
        "token",
        "digest",
        "negotiate",
        "bot",
        "apikey",
        "api-key",
        "ssws",
        "hoba",
        "mutual",
        "ntlm",
        "oauth",
        "dpop",
        "gnap",
        "sharedkey",
        "key",
        "secret",
    ]
)


def _credential_like(value: str) -> bool:
    """Whether an Authorization value without a known scheme is a credential, not a word."""
    if value.isalpha() and (len(value) < 16 or not mixed(value + "0")):
        return False
    return len(value) >= 8 and any(c.isdigit() or not c.isalpha() for c in value)


def _decide_auth(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    scheme = (match.group("scheme") or "").lower()
    # Asked first, being cheap: in code, `"Authorization": f"Bearer {token}"` ends here.
    if scheme not in _SCHEME_KINDS and not _credential_like(value):
        return None
    if is_placeholder(value) or value.lower() in _SCHEMES:
        return None
    start, end = match.span("value")
    if scheme in _SCHEME_KINDS:
        return _SCHEME_KINDS[scheme], start, end
    # An unknown scheme (SSWS, AWS4-HMAC-SHA256, a vendor's) still guards a credential
    # (asked above); but "Authorization: see the docs" is prose.
    return "authorization", start, end


_BARE_BEARER = re.compile(
    r"[Bb]" + boundary("[Bb]") + r"(?i:earer)[ \t]++(?P<value>[A-Za-z0-9._~+/=\-]{16,4096}+)"
)
_BEARER_ANCHOR = re.compile(r"bearer(?=[ \t])")


def _bearer_starts(scan: Scan) -> list[int]:
    # One search says there is none (mostly), cheaper than `in` and than starting finditer.
    folded = scan.folded
    first = _BEARER_ANCHOR.search(folded)
    if first is None:
        return []
    return [hit.start() for hit in _BEARER_ANCHOR.finditer(folded, first.start())]


def _decide_bearer(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    if not any(c.isdigit() for c in value):
        return None  # "bearer of responsibilities"
    start, end = match.span("value")
    return "bearer", start, end


# user:password@ after a scheme; the scheme itself is not needed to recognise the password.
_CONNECTION = re.compile(r"://[^\s:/?#@'\"\[\]]{0,256}+:(?P<value>[^\s/?#'\"]{1,1024})@")
# A key alone as the user info (Sentry DSNs, https://<token>@host): only a random-looking one.
_URL_KEY = re.compile(r"://(?P<value>[A-Za-z0-9_\-.~%]{20,256}+)@[A-Za-z0-9]")


def _decide_url_key(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    hexed = len(value) >= 32 and all(c in "0123456789abcdef" for c in value.lower())
    if not (hexed or looks_random(value)):
        return None
    start, end = match.span("value")
    return "url_credential", start, end


# Cookies whose name says they carry a session or a credential, and long random values.
_COOKIE = re.compile(r"[Cc](?<![A-Za-z0-9_][Cc])ookie[ \t]*:[ \t]*(?P<pairs>[^\n\r]{1,4096}+)")
_PAIR = re.compile(r"(?:^|;)[ \t]*(?P<name>[^=;\s]{1,64})=(?P<value>[^;\s]{1,2048})")
_SESSION_NAME = re.compile(r"(?i)sess|sid|auth|token|jwt|remember|login|csrf|xsrf|key")
_COOKIE_ATTRS = frozenset(["path", "domain", "expires", "max-age", "samesite", "priority"])


class _CookieRule(Rule):
    """Every credential-carrying cookie of a ``Cookie:`` or ``Set-Cookie:`` line."""

    needs = bits(":")
    gate = ("ookie:",)

    def run(self, scan: Scan, guard: Guard) -> Scan:
        found: list[tuple[Decision, str]] = []
        for line in _COOKIE.finditer(scan.text):
            offset = line.start("pairs")
            for pair in _PAIR.finditer(line.group("pairs")):
                name, value = pair.group("name"), pair.group("value")
                if name.lower() in _COOKIE_ATTRS or is_placeholder(value) or len(value) < 8:
                    continue
                if _SESSION_NAME.search(name) or looks_random(value) or len(value) >= 32:
                    start = offset + pair.start("value")
                    found.append((("session_cookie", start, start + len(value)), value))
        return replace_decisions(scan, guard, found) if found else scan


HEADER_RULES = (
    RegexRule(
        _AUTH_HEADER,
        _decide_auth,
        starts=named_at("authorization", folded=True),
        needs=":=",
        named=True,
    ),
    RegexRule(_BARE_BEARER, _decide_bearer, starts=_bearer_starts, needs="bB"),
    _CookieRule(),
    RegexRule(_CONNECTION, named_value("connection_string"), gate=("://",), needs="@"),
    RegexRule(_URL_KEY, _decide_url_key, gate=("://",), needs="@"),
)
