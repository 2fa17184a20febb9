"""The built-in rules, by class, in the order they run.

- :mod:`~urchin.redact.rules.structure`: PEM and PuTTY private keys, JWTs, service-account
  ``private_key`` fields.
- :mod:`~urchin.redact.rules.providers`: self-identifying provider tokens (``ghp_``,
  ``hf_``, ``SG.…``, ``AGE-SECRET-KEY-1…`` and several dozen more).
- :mod:`~urchin.redact.rules.headers`: ``Authorization:`` with any scheme, bare bearer
  tokens, session cookies, passwords and keys in URLs.
- :mod:`~urchin.redact.rules.commands`: command-line credentials (``--password X``,
  ``mysql -pPW``, ``curl -u user:pass``, ``config set NAME VALUE``).
- :mod:`~urchin.redact.rules.assignments`: names assigned a value, quoted names in
  subscripts and calls, XML, ``.netrc``, passwords in sentences, and (last) long random
  values under any secret-ish name.

Token rules run before name rules so a value is marked with the most telling kind.
"""

from __future__ import annotations

from urchin.redact.rules.assignments import ASSIGNMENT_RULES, ENTROPY_RULES
from urchin.redact.rules.base import Decision, Guard, RegexRule, Rule
from urchin.redact.rules.commands import COMMAND_RULES
from urchin.redact.rules.headers import HEADER_RULES
from urchin.redact.rules.providers import PROVIDER_RULES, PROVIDERS, Provider, ProviderTokens
from urchin.redact.rules.structure import GCP_PRIVATE_KEY, JWT, PRIVATE_KEY, PUTTY_KEY

__all__ = [
    "BUILTIN",
    "PROVIDERS",
    "Decision",
    "Guard",
    "Provider",
    "ProviderTokens",
    "RegexRule",
    "Rule",
]

BUILTIN: tuple[Rule, ...] = (
    GCP_PRIVATE_KEY,
    PRIVATE_KEY,
    PUTTY_KEY,
    *PROVIDER_RULES,
    JWT,
    *HEADER_RULES,
    *COMMAND_RULES,
    *ASSIGNMENT_RULES,
    *ENTROPY_RULES,
)
