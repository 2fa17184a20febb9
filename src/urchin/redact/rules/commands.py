"""Credentials on command lines: ``--password X`` and its kin, short flags whose meaning
depends on the command (``mysql -pPW``, ``sshpass -p X``, ``redis-cli -a X``,
``curl -u user:pass``, ``docker login -p X``), ``config set NAME VALUE`` commands,
``sqlplus user/pass@db``, ``openssl -passin pass:X`` and ``.netrc`` lines."""

from __future__ import annotations

import re
from collections.abc import Callable

from urchin.redact.names import classify_value, is_placeholder
from urchin.redact.rules.base import VALUE, Decision, RegexRule, value_span
from urchin.redact.scan import Scan

__all__ = ["COMMAND_RULES"]

_FLAG = re.compile(
    r"--(?<![\w\-]--)(?P<name>(?i:(?:[a-z0-9]++-){0,4}"
    r"(?:password|passwd|passphrase|pass|token|secret|api-?key|access-key|secret-key"
    r"|private-key|account-key|client-secret|credentials?|auth|sas-token|storage-key"
    r"|user|proxy-user)))"
    r"(?:[ \t]++|=)(?!-)" + VALUE
)


def _decide_flag(match: re.Match[str]) -> Decision | None:
    value, start, end, _ = value_span(match)
    name = match.group("name")
    lowered = name.lower()
    if lowered.endswith(("auth", "user")):
        # --auth basic and --user admin name no secret; --user admin:pw (curl) does.
        cut = value.find(":")
        if cut <= 0 or value[cut + 1 :].isdigit() or cut == len(value) - 1:
            return None  # --user 1000:1000 is a uid and gid
        start += cut + 1
        value = value[cut + 1 :]
        return None if is_placeholder(value) else ("password", start, end)
    kind = classify_value(name, value, quoted=True)
    return None if kind is None else (kind, start, end)


# A short flag and its value, attached (-pPW) or after blanks (-p PW); which flags carry a
# credential depends on the command, read from the start of the line's command.
_SHORT = re.compile(
    r" -(?P<flag>[upaPwUNkAX])(?P<gap>[ \t]*+)"
    r"(?:'(?P<sq>[^'\n]{1,512}+)'|\"(?P<dq>[^\"\n]{1,512}+)\"|(?P<bare>[^\s'\"|;&<>()]{1,512}+))"
)
# Where _SHORT can start: a blank before a dash and a flag letter. Looked for from the
# dash, which most texts hold far fewer of than blanks (a search opening with the blank
# stops at every one); each is then tried from its blank.
_SHORT_FLAG = re.compile(r"-(?<= -)[upaPwUNkAX]")


def _short_starts(scan: Scan) -> list[int]:
    # Mostly there is none: one search says so, cheaper to start than finditer.
    text = scan.text
    first = _SHORT_FLAG.search(text)
    if first is None:
        return []
    return [found.start() - 1 for found in _SHORT_FLAG.finditer(text, first.start())]


# Commands, and the flags that carry a password for them: "=" attached only, " " after
# blanks only, "*" either; ":" and "%" mean a user:pass (user%pass) pair, the part after it.
# Each command's pattern comes with literals one of which every match holds: a short flag
# mostly belongs to no such command (`docker run -p 8080:8080`), and `in` says so faster
# than a search that opens with `\b`.
_Family = tuple[tuple[str, ...], re.Pattern[str], dict[str, str]]


def _family(literals: tuple[str, ...], pattern: str, flags: dict[str, str]) -> _Family:
    return literals, re.compile(pattern), flags


_FAMILIES: tuple[_Family, ...] = (
    _family(("mysql", "mariadb"), r"\b(?:mysql\w*|mariadb[\w\-]*)\b", {"p": "="}),
    _family(("sshpass",), r"\bsshpass\b", {"p": "*"}),
    _family(("redis-cli",), r"\bredis-cli\b", {"a": " "}),
    _family(("login",), r"\b(?:az|oc)\b[^\n]*\blogin\b", {"p": " "}),
    _family(
        ("login",),
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|finch)\b"
        r"[^\n]*\blogin\b",
        {"p": " "},
    ),
    _family(("curl",), r"\bcurl\b", {"u": ":", "U": ":"}),
    _family(("http",), r"\b(?:http|https|httpie)\b", {"a": ":"}),
    _family(
        ("sqlcmd", "bcp", "osql", "isql", "ipmitool"),
        r"\b(?:sqlcmd|bcp|osql|isql|ipmitool)\b",
        {"P": " "},
    ),
    _family(("ldap",), r"\bldap\w+\b", {"w": " "}),
    _family(
        ("smbclient", "rpcclient", "smbmap", "smbcacls", "crackmapexec", "nxc"),
        r"\b(?:smbclient|rpcclient|smbmap|smbcacls|crackmapexec|nxc)\b",
        {"U": "%"},
    ),
    _family(("zip",), r"\b(?:zip|unzip)\b", {"P": " "}),
    _family(("7z", "rar"), r"\b(?:7z|7za|7zz|rar|unrar)\b", {"p": "="}),
    _family(("mongo",), r"\bmongo\w*\b", {"p": " "}),
    _family(("twine",), r"\btwine\b", {"p": " "}),
    _family(("ssh-keygen",), r"\bssh-keygen\b", {"N": " ", "P": " "}),
    _family(("snmp",), r"\bsnmp\w+\b", {"A": " ", "X": " "}),
    _family(("openssl",), r"\bopenssl\b[^\n]*\benc\b", {"k": " "}),
    _family(("lftp",), r"\blftp\b", {"u": ","}),
)
#: Per flag letter, the commands that read it, in order.
_BY_FLAG: dict[str, tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...]] = {
    flag: tuple((words, family, flags[flag]) for words, family, flags in _FAMILIES if flag in flags)
    for flag in dict.fromkeys(flag for *_, flags in _FAMILIES for flag in flags)
}
#: Per flag letter, one search for every word of the commands that read it.
_FLAG_WORDS: dict[str, re.Pattern[str]] = {
    flag: re.compile(
        "|".join(re.escape(word) for word in dict.fromkeys(w for ws, _, _ in members for w in ws))
    )
    for flag, members in _BY_FLAG.items()
}
_COMMAND_BREAK = re.compile(r"(?:\|\||&&|[|;\n]|\$\()")


def _command_of(text: str, at: int) -> str:
    """The command the flag at ``at`` belongs to: from the last break before it."""
    line_start = text.rfind("\n", 0, at) + 1
    segment = text[line_start:at]
    breaks = list(_COMMAND_BREAK.finditer(segment))
    return segment[breaks[-1].end() :] if breaks else segment


def _decide_short(match: re.Match[str]) -> Decision | None:
    flag = match.group("flag")
    on_line = _FLAG_WORDS.get(flag)
    text, at = match.string, match.start()
    # The command is part of the line before the flag: a flag whose commands' words are
    # not on that line (`docker run -p 8080:8080`) is decided without finding the command
    # (asked first: that is how nearly every short flag is decided).
    if on_line is None or on_line.search(text, text.rfind("\n", 0, at) + 1, at) is None:
        return None
    attached = not match.group("gap")
    group = match.lastgroup or "bare"
    start, end = match.span(group)
    value = text[start:end]
    members = _BY_FLAG[flag]
    command = _command_of(text, at)
    for words, family, how in members:
        if not any(word in command for word in words) or family.search(command) is None:
            continue
        if is_placeholder(value):
            return None
        if (how == "=" and not attached) or (how == " " and attached and group == "bare"):
            return None  # mysql -p db (a prompt, then a database); -pfile for 7z is fine
        if how in ":%,":
            cut = value.find(how)
            if cut <= 0 or cut == len(value) - 1:
                return None  # curl -u user: prompts for the password
            start += cut + 1
            value = value[cut + 1 :]
            if is_placeholder(value):
                return None
        if value.startswith("-"):
            return None
        return "password", start, end
    return None


# `aws configure set NAME VALUE`, `npm config set NAME VALUE`, `git config NAME VALUE`,
# `gh secret set NAME --body VALUE`, `doppler secrets set NAME VALUE`, `dotnet user-secrets set`.
_CONFIG_SET = re.compile(
    r" set(?<=(?:fig|ure|ret|ets|ble) set)[ \t]++"
    r"(?:--?[\w\-]++[ \t]++)*?"
    r"[\"']?(?P<name>[\w.:/@\-]{2,80}+)[\"']?[ \t]++(?:(?:--body|-b)[ \t]++)?"
    r"(?:'(?P<sq>[^'\n]{1,512}+)'|\"(?P<dq>[^\"\n]{1,512}+)\"|(?P<bare>[^\s'\"|;&<>]{1,512}+))"
)
_GIT_CONFIG = re.compile(
    r"git(?<![\w\-]git)[ \t]++config[ \t]++(?:--[\w\-]++[ \t]++)*"
    r"(?P<name>[\w.\-]{2,80}+)[ \t]++"
    r"(?:'(?P<sq>[^'\n]{1,512}+)'|\"(?P<dq>[^\"\n]{1,512}+)\"|(?P<bare>[^\s'\"|;&<>]{1,512}+))"
)


def _decide_named_argument(match: re.Match[str]) -> Decision | None:
    group = match.lastgroup or "bare"
    start, end = match.span(group)
    value = match.string[start:end]
    if "=" in match.group("name"):
        return None
    kind = classify_value(match.group("name"), value, quoted=True)
    return None if kind is None else (kind, start, end)


_SQLPLUS = re.compile(
    r"(?:sqlplus|sqlldr|expdp|impdp)[ \t]++(?:-\w++[ \t]++)*"
    r"[\w$#.\"]{1,64}+/(?P<value>[^@\s/]{1,128}+)(?=@|[ \t]|$)"
)
_OPENSSL_PASS = re.compile(r"-pass(?:in|out)?[ \t]++[\"']?pass:(?P<value>[^\s\"']{1,512}+)")
_HTPASSWD = re.compile(
    r"htpasswd[ \t]++(?:-[a-zA-Z]*b[a-zA-Z]*[ \t]++)(?:-\w++[ \t]++)*"
    r"\S++[ \t]++\S++[ \t]++(?:'(?P<sq>[^'\n]{1,512}+)'|\"(?P<dq>[^\"\n]{1,512}+)\""
    r"|(?P<bare>[^\s'\"|;&<>]{1,512}+))"
)


def _decide_value_group(kind: str) -> Callable[[re.Match[str]], Decision | None]:
    def decide(match: re.Match[str]) -> Decision | None:
        group = "value" if "value" in match.groupdict() else (match.lastgroup or "bare")
        start, end = match.span(group)
        if start < 0 or is_placeholder(match.string[start:end]):
            return None
        return kind, start, end

    return decide


COMMAND_RULES = (
    # The long flags' pattern opens with "--": its own search costs what asking for that
    # would, and goes on only where a flag follows. Short flags are tried where
    # _short_starts finds a dash after a blank and before a flag letter.
    RegexRule(_FLAG, _decide_flag, needs="-"),
    RegexRule(_SHORT, _decide_short, starts=_short_starts, needs="-"),
    RegexRule(_CONFIG_SET, _decide_named_argument, gate=(" set ",)),
    RegexRule(_GIT_CONFIG, _decide_named_argument, gate=("git config",)),
    RegexRule(_SQLPLUS, _decide_value_group("password"), gate=("sqlplus",), needs="/"),
    RegexRule(_OPENSSL_PASS, _decide_value_group("password"), gate=("pass:",), needs=":"),
    RegexRule(_HTPASSWD, _decide_value_group("password"), gate=("htpasswd",), needs="w"),
)
