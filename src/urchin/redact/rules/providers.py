"""Self-identifying provider tokens: shapes whose prefix says whose secret they are.

The long-standing shapes (AWS, Google, Azure, GitHub, GitLab, Slack, OpenAI, Anthropic,
Stripe) each keep a rule behind a literal gate. The rest, several dozen providers, share
one :class:`ProviderTokens` rule: a token is found where its prefix ends in ``_``, ``-``,
``.`` or ``:`` (or holds a rare literal such as ``Q~``), by a few searches that each start
with that literal character and test the prefixes in look-behinds, so ordinary text pays a
handful of fast scans however many providers there are. Prefixes and lengths follow the
providers' published formats; every token must also stand apart from the text around it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from urchin.redact.names import mixed
from urchin.redact.rules.base import (
    Decision,
    Guard,
    RegexRule,
    Rule,
    boundary,
    named_value,
    replace_decisions,
    token,
)
from urchin.redact.scan import Scan, bits

__all__ = ["PROVIDERS", "PROVIDER_RULES", "Provider", "ProviderTokens"]

_B64URL = "A-Za-z0-9_\\-"


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _cased(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _openai(value: str) -> bool:
    body = value.rsplit("-", 1)[-1]
    return mixed(value) or (len(body) >= 32 and _has_digit_and_letter(body))


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


@dataclass(frozen=True, slots=True)
class Provider:
    """One token shape. ``probe`` is the character its prefix ends with (the search
    starts there); ``behind`` the prefix text ending with that character; the token starts
    ``back`` characters before ``behind`` (or, when ``walk`` is set, as far back as those
    characters go, at most ``back``). ``pattern`` matches the whole token from its start,
    which must not follow a letter or digit (unless they spell ``glued``).

    The probe looks for its character followed by 16 letters and digits, which ordinary
    text rarely has; ``b64`` tokens, whose body may hold ``_-+/`` at once, are probed with
    their prefixes in look-behinds instead, and ``ahead`` replaces the probe's pattern.
    ``before`` is what can come just before the probe character in a token (as a class of
    a regular expression), when ``behind`` is too short to say: with it for every such
    provider of a probe, the probe first asks that character. ``after`` is text that
    always follows the probe character in the token: a character only ``before`` lets
    through is then asked for it too."""

    kind: str
    probe: str
    behind: str
    pattern: str
    back: int = 0
    walk: str = ""
    check: Callable[[str], bool] | None = None
    b64: bool = False
    ahead: str = ""
    glued: str = ""
    before: str = ""
    after: str = ""


def _p(
    kind: str,
    prefix: str,
    body: str,
    *,
    probe: str | None = None,
    check: Callable[[str], bool] | None = _has_digit_and_letter,
    b64: bool = False,
) -> Provider:
    """A token made of a literal ``prefix`` and a ``body`` pattern; the probe is the last
    of ``_-.:`` in the prefix, and the prefix up to it is what the look-behind tests."""
    char = probe or next(c for c in reversed(prefix) if c in "_-.:")
    cut = prefix.rindex(char) + 1
    return Provider(kind, char, prefix[:cut], re.escape(prefix) + body, check=check, b64=b64)


PROVIDERS: tuple[Provider, ...] = (
    # -- the long-standing shapes, probed like the rest -------------------------------------
    *(_p("github_token", f"gh{t}_", r"[A-Za-z0-9]{36,255}+", check=None) for t in "pousr"),
    _p("github_token", "github_pat_", r"[A-Za-z0-9_]{22,255}+", check=None),
    *(
        _p("gitlab_token", f"gl{t}-", r"[A-Za-z0-9_\-]{20,}+", check=None, b64=True)
        for t in ("pat", "dt", "rt", "ptt", "oas", "soat", "cbt", "imt", "agent", "ffct", "ft")
    ),
    *(
        _p("slack_token", f"xox{t}-", r"[A-Za-z0-9\-]{10,}+", check=_has_digit, b64=True)
        for t in "abposre"
    ),
    _p("slack_token", "xapp-", r"[A-Za-z0-9\-]{10,}+", check=_has_digit, b64=True),
    _p("anthropic_key", "sk-ant-", r"[A-Za-z0-9_\-]{20,}+", check=None, b64=True),
    _p(
        "openai_key",
        "sk-",
        r"(?!ant-|or-v1-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+",
        check=_openai,
        b64=True,
    ),
    *(
        _p("stripe_key", f"{k}k_{env}_", r"[A-Za-z0-9]{16,}+", check=None)
        for k in "sr"
        for env in ("live", "test", "prod")
    ),
    # -- "_" -------------------------------------------------------------------------------
    _p("huggingface_token", "hf_", r"[A-Za-z0-9]{30,40}", check=_cased),
    _p("huggingface_token", "api_org_", r"[A-Za-z0-9]{30,40}", check=_cased),
    _p("npm_token", "npm_", r"[A-Za-z0-9]{36}"),
    *(_p("shopify_token", f"shp{t}_", r"[a-fA-F0-9]{32}") for t in ("at", "ca", "pa", "ss")),
    *(_p("digitalocean_token", f"do{t}_v1_", r"[a-f0-9]{64}") for t in "opr"),
    _p("linear_key", "lin_api_", r"[A-Za-z0-9]{40}"),
    _p("linear_key", "lin_oauth_", r"[A-Za-z0-9]{40}"),
    _p("notion_token", "ntn_", r"[A-Za-z0-9]{40,50}"),
    _p("notion_token", "secret_", r"[A-Za-z0-9]{43}", check=mixed),
    _p("grafana_token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _p("grafana_token", "glc_", r"[A-Za-z0-9+/]{32,400}={0,2}", b64=True),
    _p("sentry_token", "sntrys_", r"eyJ[A-Za-z0-9+/=_\-]{40,}", b64=True),
    _p("sentry_token", "sntryu_", r"[a-f0-9]{64}"),
    _p("docker_token", "dckr_pat_", rf"[{_B64URL}]{{27,}}", b64=True),
    _p("docker_token", "dckr_oat_", rf"[{_B64URL}]{{27,}}", b64=True),
    _p("supabase_key", "sbp_", r"[a-f0-9]{40}"),
    _p("supabase_key", "sb_secret_", rf"[{_B64URL}]{{24,}}", b64=True),
    *(
        _p("planetscale_token", f"pscale_{t}_", r"[A-Za-z0-9_\-.]{32,64}", b64=True)
        for t in ("tkn", "pw", "oauth")
    ),
    _p("replicate_token", "r8_", r"[A-Za-z0-9]{37}", check=mixed),
    _p("groq_key", "gsk_", r"[A-Za-z0-9]{48,56}", check=mixed),
    Provider(
        "pinecone_key", "_", "", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,90}", 14, "A-Za-z0-9_"
    ),
    _p("buildkite_token", "bkua_", r"[a-f0-9]{40}"),
    _p("figma_token", "figd_", rf"[{_B64URL}]{{36,48}}", b64=True),
    _p("webhook_secret", "whsec_", r"[A-Za-z0-9+/=]{24,}", b64=True),
    _p("render_key", "rnd_", r"[A-Za-z0-9]{32}", check=mixed),
    _p("netlify_token", "nfp_", r"[A-Za-z0-9]{36,40}"),
    _p("sourcegraph_token", "sgp_", r"(?:[a-f0-9]{16}_)?[a-f0-9]{40}"),
    *(_p("sonarqube_token", f"sq{t}_", r"[a-f0-9]{40}") for t in "upa"),
    _p("langsmith_key", "lsv2_pt_", r"[a-f0-9]{32}_[a-f0-9]{10}"),
    _p("langsmith_key", "lsv2_sk_", r"[a-f0-9]{32}_[a-f0-9]{10}"),
    _p("readme_key", "rdme_", r"[a-z0-9]{70}"),
    _p("shippo_token", "shippo_live_", r"[a-f0-9]{40}"),
    _p("shippo_token", "shippo_test_", r"[a-f0-9]{40}"),
    _p("prefect_key", "pnu_", r"[A-Za-z0-9]{36}"),
    _p("circleci_token", "CCIPAT_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    _p("onepassword_token", "ops_", r"eyJ[A-Za-z0-9+/=_\-]{60,}", b64=True),
    _p("fly_token", "fo1_", rf"[{_B64URL}]{{40,}}", b64=True),
    _p("fly_token", "fm2_", r"[A-Za-z0-9+/=_\-]{60,}", b64=True),
    Provider(
        "resend_key", "_", "", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{20,32}", 12, "A-Za-z0-9_", mixed
    ),
    _p("adafruit_key", "aio_", r"[A-Za-z0-9]{28}", check=mixed),
    _p("typeform_token", "tfp_", r"[A-Za-z0-9_\-.]{44,64}", b64=True),
    # -- "-" -------------------------------------------------------------------------------
    _p("pypi_token", "pypi-AgE", rf"[{_B64URL}]{{50,}}", probe="-", b64=True),
    _p("mailgun_key", "key-", r"[0-9a-f]{32}"),
    _p("pulumi_token", "pul-", r"[a-f0-9]{40}"),
    _p("heroku_key", "HRKU-", rf"AA[{_B64URL}]{{50,70}}", check=None, b64=True),
    _p("postman_key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    _p("google_oauth_secret", "GOCSPX-", rf"[{_B64URL}]{{28}}", check=None, b64=True),
    _p("square_token", "sq0atp-", rf"[{_B64URL}]{{22,60}}", b64=True),
    _p("square_token", "sq0csp-", rf"[{_B64URL}]{{40,60}}", b64=True),
    _p("newrelic_key", "NRAK-", r"[A-Z0-9]{27}"),
    _p("tailscale_key", "tskey-", r"[a-z]{3,8}-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", b64=True),
    _p("perplexity_key", "pplx-", r"[A-Za-z0-9]{48}"),
    _p("xai_key", "xai-", r"[A-Za-z0-9]{70,90}", check=mixed),
    _p("openrouter_key", "sk-or-v1-", r"[a-f0-9]{64}"),
    _p("age_secret_key", "AGE-SECRET-KEY-", r"1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _p("contentful_token", "CFPAT-", rf"[{_B64URL}]{{43}}", b64=True),
    _p("brevo_key", "xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _p("cloudflare_key", "v1.0-", r"[a-f0-9]{24}-[a-f0-9]{146}", probe="-"),
    Provider(
        "mailchimp_key",
        "-",
        "-",
        r"[0-9a-f]{32}-us[0-9]{1,2}",
        32,
        ahead=r"(?=us[0-9])(?<=[0-9a-f]-)",
        before="0-9a-f",
        after="us",
    ),
    # -- "." -------------------------------------------------------------------------------
    _p("sendgrid_key", "SG.", rf"[{_B64URL}]{{22}}\.[{_B64URL}]{{43}}", check=None, b64=True),
    *(_p("vault_token", f"hv{t}.", rf"[{_B64URL}]{{24,}}", check=None, b64=True) for t in "sbr"),
    *(
        _p("doppler_token", f"dp.{t}.", r"(?:[a-z0-9_\-]{1,32}\.)?[A-Za-z0-9]{40,44}", b64=True)
        for t in ("st", "ct", "pt", "sa", "scim", "audit")
    ),
    _p("google_oauth_token", "ya29.", rf"[{_B64URL}]{{30,}}", check=None, b64=True),
    _p("dropbox_token", "sl.", rf"[{_B64URL}.]{{120,}}", check=None, b64=True),
    _p("mapbox_secret", "sk.eyJ", rf"[{_B64URL}]{{40,}}\.[{_B64URL}]{{16,}}", probe=".", b64=True),
    _p("dynatrace_token", "dt0c01.", r"[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    Provider(
        "terraform_token",
        ".",
        ".atlasv1.",
        rf"[A-Za-z0-9]{{14}}\.atlasv1\.[{_B64URL}]{{60,}}",
        14,
        b64=True,
    ),
    Provider("airtable_token", ".", ".", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", 17),
    Provider(
        "discord_token",
        ".",
        ".",
        rf"[MNO][{_B64URL}]{{22,27}}\.[{_B64URL}]{{6,7}}\.[{_B64URL}]{{27,40}}",
        28,
        walk=_B64URL,
        check=lambda t: mixed(t.split(".")[0]),
        ahead=rf"(?=[{_B64URL}]{{6,7}}\.[{_B64URL}]{{27}})",
    ),
    # -- ":" -------------------------------------------------------------------------------
    Provider(
        "telegram_token",
        ":",
        ":",
        rf"[0-9]{{8,10}}:A[{_B64URL}]{{34}}",
        10,
        walk="0-9",
        ahead=rf"(?=A[{_B64URL}]{{34}})(?<=[0-9]{{8}}:)",
        glued="bot",  # https://api.telegram.org/bot<token>/getMe
        before="0-9",
    ),
    # -- "~" (Azure AD client secrets hold "Q~" after three characters and a digit) --------
    Provider(
        "azure_client_secret",
        "~",
        "Q~",
        r"[A-Za-z0-9_.~\-]{3}[0-9]Q~[A-Za-z0-9_.~\-]{31,34}",
        4,
        ahead=r"(?<=[0-9]Q~)",
    ),
)

_Entry = tuple[Provider, re.Pattern[str]]
#: Per probe: its search, the providers by the last three characters of their prefix,
#: and those whose prefix is shorter (tried at every hit).
_Probe = tuple[re.Pattern[str], dict[str, list[_Entry]], list[_Entry]]
# Look-aheads an ordinary occurrence of the probe character fails at once: ". " ends a
# sentence, "_id" and a UUID's "-2b2d" are short.
_ALNUM_RUN = "[A-Za-z0-9]{16}"
_B64_RUN = "(?=[A-Za-z0-9_\\-+/=.]{12})"


def _guard(char: str, members: list[Provider]) -> str:
    """A look-behind for what can come just before ``char`` in any member's token, or ""
    when some member does not say. The decisions ask as much (a prefix of three or more
    characters is looked up by its last three, a shorter one checked whole), so at a place
    failing it no decision is lost; in shell output, where most dashes follow a blank or a
    dash, the probe then stops at its first question."""
    chars: set[str] = set()
    classes: list[str] = []
    for provider in members:
        if len(provider.behind) >= 2:
            chars.add(re.escape(provider.behind[-2]))
        elif provider.before:
            classes.append(provider.before)
        else:
            return ""
    probe = re.escape(char)
    guard = f"(?<=[{''.join(sorted(chars))}{''.join(dict.fromkeys(classes))}]{probe})"
    # Then, where every member that lets a character through says more (the two
    # characters before the probe, of a prefix of three or more; or ``after``, what
    # follows), one of those must hold too: the dashes of a UUID ("4a5b-") or a date
    # ("26-") go no further. Mailchimp's hex digits, before "-us", would let them all by.
    pairs: set[str] = set()
    afters: set[str] = set()
    unknown: set[str] = set()
    lets: set[str] = set()
    for provider in members:
        lets |= _lets(provider)
        if len(provider.behind) >= 3:
            pairs.add(provider.behind[-3:-1])
        elif provider.after:
            afters.add(provider.after)
        else:
            unknown |= _lets(provider)
    if checked := sorted(lets - unknown):
        # The pairs are asked loosely, a class per character, one test each: an
        # alternation of every pair costs more than the branches it would spare.
        firsts = "".join(sorted({re.escape(pair[0]) for pair in pairs}))
        seconds = "".join(sorted({re.escape(pair[1]) for pair in pairs}))
        ahead = "|".join(map(re.escape, sorted(afters)))
        guard += (
            f"(?!(?<=[{''.join(map(re.escape, checked))}]{probe})"
            + (f"(?<![{firsts}][{seconds}]{probe})" if pairs else "")
            + (f"(?!{ahead})" if ahead else "")
            + ")"
        )
    return guard


def _lets(provider: Provider) -> set[str]:
    """The ASCII characters a guard lets through before the probe for ``provider``."""
    if len(provider.behind) >= 2:
        return {provider.behind[-2]}
    allowed = re.compile(f"[{provider.before}]")
    return {c for c in map(chr, range(128)) if allowed.fullmatch(c)}


def _probe(char: str, members: list[Provider]) -> _Probe:
    """One search for every provider probed at ``char``.

    It matches the character followed by 16 letters and digits, or (for ``b64``
    providers, whose bodies may hold ``_-+/`` at once) by 12 token characters after one
    of their prefixes, which a one-character class checks before the prefixes do; or an
    ``ahead`` of its own.
    """
    branches = [_ALNUM_RUN]
    behinds = list(dict.fromkeys(p.behind for p in members if p.b64 and not p.ahead))
    if behinds:
        before = "".join(sorted({re.escape(b[-2]) for b in behinds}))
        # Every b64 prefix has two characters before the probe's: a UUID's "3e-" or a
        # date's "26-" fails that pair at once, before the run and the whole prefixes.
        # (Every b64 body opens with a letter, digit, "_" or "-": the run asks that too.)
        pairs = "|".join(sorted({re.escape(b[-3:-1]) for b in behinds}))
        branches.append(
            f"(?<=[{before}]{re.escape(char)})"
            f"(?<=(?:{pairs}){re.escape(char)}){_B64_RUN}(?:"
            + "|".join(f"(?<={re.escape(b)})" for b in behinds)
            + ")"
        )
    for provider in members:
        if provider.ahead and provider.ahead not in branches:
            branches.append(provider.ahead)
    pattern = re.compile(re.escape(char) + _guard(char, members) + "(?:" + "|".join(branches) + ")")
    keyed: dict[str, list[_Entry]] = {}
    always: list[_Entry] = []
    for provider in members:
        # A token ends where its characters do: never a prefix of a longer run.
        entry = (provider, re.compile(rf"(?:{provider.pattern})(?![A-Za-z0-9])"))
        if len(provider.behind) >= 3:
            keyed.setdefault(provider.behind[-3:], []).append(entry)
        else:
            always.append(entry)
    return pattern, keyed, always


# What every token probed at a character holds, when that is rarer than the character:
# Telegram's ":A…" and Azure's "…Q~…".
_GATES = {":": ":A", "~": "Q~"}


class ProviderTokens(Rule):
    """Every shape of :data:`PROVIDERS`, found from its probe character (see the module)."""

    needs = bits("_-.:~")
    literals = tuple(_GATES.values())

    def __init__(self, providers: tuple[Provider, ...] = PROVIDERS) -> None:
        chars = dict.fromkeys(p.probe for p in providers)
        # Per probe: its character, or the literal every token probed there holds.
        self._probes = [
            (_GATES.get(c, c), *_probe(c, [p for p in providers if p.probe == c])) for c in chars
        ]
        # Per gate literal: its probe character and the gate to ask.
        self._asked = {literal: (char, (literal,)) for char, literal in _GATES.items()}

    def run(self, scan: Scan, guard: Guard) -> Scan:
        text = scan.text
        found: list[tuple[Decision, str]] = []
        exhaustive = scan.exhaustive
        for char, probe, keyed, always in self._probes:
            # The probe character alone is a memchr; a literal every token of the probe
            # holds, when there is one, was looked for with the gates (asked only when the
            # character, a memchr, is there).
            if len(char) == 1:
                if char not in text and not exhaustive:
                    continue
            else:
                single, asked = self._asked[char]
                if (single not in text and not exhaustive) or not scan.has(asked):
                    continue
            if probe.search(text) is not None:
                found.extend(self._decisions(text, probe, keyed, always))
        if not found:
            return scan
        found.sort(key=lambda item: (item[0][1], -item[0][2]))
        return replace_decisions(scan, guard, found)

    @staticmethod
    def _decisions(
        text: str, probe: re.Pattern[str], keyed: dict[str, list[_Entry]], always: list[_Entry]
    ) -> Iterator[tuple[Decision, str]]:
        for hit in probe.finditer(text):
            after = hit.start() + 1
            for provider, pattern in (*keyed.get(text[after - 3 : after], ()), *always):
                behind = provider.behind
                if behind and not text.startswith(behind, after - len(behind)):
                    continue
                start = _start(text, after, provider)
                if start < 0 or (
                    start > 0
                    and text[start - 1].isalnum()
                    and not (provider.glued and text.endswith(provider.glued, 0, start))
                ):
                    continue
                match = pattern.match(text, start)
                if match is None:
                    continue
                value = match.group(0)
                if provider.check is not None and not provider.check(value):
                    continue
                yield (provider.kind, start, match.end()), value
                break


_WALKS: dict[str, re.Pattern[str]] = {}


def _start(text: str, after: int, provider: Provider) -> int:
    """Where the token whose probe character ends at ``after`` starts (-1: nowhere)."""
    if not provider.walk:
        return after - len(provider.behind) - provider.back
    walk = _WALKS.get(provider.walk)
    if walk is None:
        walk = _WALKS[provider.walk] = re.compile(f"[{provider.walk}]")
    # The characters before the probe, as far back as they go (at most ``back``).
    lowest = max(0, after - 1 - provider.back)
    begin = after - 1
    while begin > lowest and walk.match(text, begin - 1) is not None:
        begin -= 1
    return begin


# -- the long-standing shapes ----------------------------------------------------------------

# The shapes below that hold a capital A (AWS and Google keys, Azure's AccountKey and
# SharedAccessKey, Facebook's EAA, Atlassian's ATATT3 and ATBB, Twitter's run of A's) are
# gated on their literals, all looked for in one search after the "A".
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA")


# Slack's and Discord's webhook URLs both hold "hooks": one literal search for the two.
_HOOKS = ("hooks",)


PROVIDER_RULES: tuple[Rule, ...] = (
    token(
        "aws_key",
        r"A" + boundary("A", "A-Za-z0-9") + r"(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
        "A",
        _AWS_PREFIXES,
    ),
    token("gcp_api_key", r"AIza" + r"(?<![\w\-]AIza)[0-9A-Za-z_\-]{35}(?![\w\-])", "z", ("AIza",)),
    RegexRule(
        re.compile(
            r"(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<value>[A-Za-z0-9+/%]{16,}+={0,2})"
        ),
        named_value("azure_key"),
        starts=None,
        gate=("AccountKey", "AccessKey"),
        needs="=",
    ),
    RegexRule(
        re.compile(r"[?&]sig=(?P<value>[A-Za-z0-9%+/=_\-]{16,}+)"),
        named_value("azure_sas"),
        # Asked after "?" or "&", both rare; "=" is everywhere.
        gate=("?sig=", "&sig="),
        needs="=",
    ),
    RegexRule(
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<value>[A-Za-z0-9/_\-]{20,}+)"
        ),
        named_value("slack_webhook"),
        gate=_HOOKS,
        needs=":",
    ),
    RegexRule(
        re.compile(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{15,20}/"
            r"(?P<value>[A-Za-z0-9_\-]{60,80}+)"
        ),
        named_value("discord_webhook"),
        gate=_HOOKS,
        needs=":",
    ),
    ProviderTokens(),
    # Shapes whose prefix has no separator: each behind a literal that must occur.
    token(
        "twilio_key",
        r"SK" + boundary("S", "A-Za-z0-9") + r"[0-9a-fA-F]{32}(?![A-Za-z0-9])",
        "K",
        ("SK",),
        check=_has_digit_and_letter,
    ),
    token(
        "databricks_token",
        r"dapi" + r"(?<![A-Za-z0-9]dapi)[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])",
        "",
        ("dapi",),
        check=_has_digit_and_letter,
    ),
    token(
        "facebook_token",
        r"EAA" + r"(?<![A-Za-z0-9+/=_\-]EAA)[A-Za-z0-9]{60,}+",
        "E",
        ("EAA",),
        check=mixed,
    ),
    token(
        "atlassian_token",
        r"AT"
        + r"(?<![A-Za-z0-9]AT)(?:ATT3[A-Za-z0-9_\-=]{150,}+|BB[A-Za-z0-9]{32}(?![A-Za-z0-9]))",
        "A",
        ("ATATT3", "ATBB"),
    ),
    token(
        "twitter_token",
        r"AAAAAAAAAAAAAAAAAAAA" + r"[A-Za-z0-9%]{30,}+",
        "A",
        ("A" * 20,),
    ),
    token(
        "google_refresh_token",
        r"1//0" + r"(?<![A-Za-z0-9]1//0)[A-Za-z0-9_\-]{40,}+",
        "/",
        ("1//0",),
    ),
)
