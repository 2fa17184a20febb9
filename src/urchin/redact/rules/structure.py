"""Secrets recognised by their structure: PEM and PuTTY private-key blocks, JSON Web
Tokens, and the ``private_key`` of a Google service-account file."""

from __future__ import annotations

import re
from bisect import bisect_left

from urchin.redact.rules.base import Guard, RegexRule, Rule, named_at, named_value, token
from urchin.redact.scan import Scan, Span, bits

__all__ = ["GCP_PRIVATE_KEY", "JWT", "PRIVATE_KEY", "PUTTY_KEY"]


class _PrivateKeyRule(Rule):
    """PEM private-key blocks (PKCS#1/8, OpenSSH, EC, encrypted, PGP), BEGIN through END.

    A block cut off before its END line still leaks the key, so without an END the base64
    body after BEGIN is redacted instead. Ends are found once, up front, so many BEGIN lines
    without an END cost one pass, not one pass each.
    """

    needs = bits("B")
    gate = ("-----BEGIN ",)
    _begin = re.compile(r"-----BEGIN (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    _end = re.compile(r"-----END (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    # Base64 lines, real or JSON-escaped line breaks, and RFC 1421 header lines.
    _body = re.compile(
        r"(?:[ \t]*+(?:\\r|\\n|\r?\n)|[A-Za-z0-9+/=]++"
        r"|(?:Proc-Type|DEK-Info|Comment|Version):[^\n]{0,200}+)*+"
    )

    def run(self, scan: Scan, guard: Guard) -> Scan:
        text = scan.text
        begins = list(self._begin.finditer(text))
        if not begins:
            return scan
        end_matches = list(self._end.finditer(text))
        ends = [m.start() for m in end_matches]
        spans: list[Span] = []
        pos = 0
        for begin in begins:
            if begin.start() < pos:
                continue
            index = bisect_left(ends, begin.end())
            if index < len(ends):
                stop = end_matches[index].end()
            else:
                body = self._body.match(text, begin.end())
                stop = body.end() if body else begin.end()
            if guard.allow(text[begin.start() : stop], text[begin.start() : stop]):
                continue
            spans.append((begin.start(), stop, guard.take("private_key")))
            pos = stop
        return scan.replaced(spans) if spans else scan


PRIVATE_KEY: Rule = _PrivateKeyRule()

# A PuTTY key file: the lines after "Private-Lines: N" (and the MAC) are the key.
PUTTY_KEY = RegexRule(
    re.compile(
        r"Private-Lines:[ \t]*\d{1,3}[ \t]*(?:\\r|\\n|\r?\n)"
        r"(?P<value>(?:[A-Za-z0-9+/=]{1,128}+(?:\\r|\\n|\r?\n)?)++"
        r"(?:Private-MAC:[ \t]*[0-9a-fA-F]{20,128}+)?)"
    ),
    named_value("private_key"),
    gate=("Private-Lines:",),
    needs="L",
)

GCP_PRIVATE_KEY = RegexRule(
    re.compile(r"\"private_key\"[ \t]*:[ \t]*\"(?P<value>(?:[^\"\\]|\\.){1,16384}+)"),
    named_value("private_key"),
    starts=named_at("private_key", '"'),
    needs=":",
    named=True,
)

# Header, payload and signature (or the five parts of a JWE), base64url; the header always
# opens with '{"', which encodes to "eyJ".
JWT = token(
    "jwt",
    r"eyJ" + r"(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]*+",
    "J",
    ("eyJ",),
)
