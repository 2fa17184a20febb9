"""Properties every redaction keeps, whatever the text."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.urchin.redact.corpus import build
from urchin.redact import Redactor

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
_SAMPLES = build()
_SECRET_TEXTS = [s.text for s in _SAMPLES if s.secrets]
_CLEAN_TEXTS = [s.text for s in _SAMPLES if not s.secrets]
_FRAGMENTS = [
    *("password", "token", "Authorization: ", "Bearer ", "-p", " -u ", "://", "@", ":", "="),
    *('"', "'", "`", "]", ",", "(", ")", "\n", " ", "_", "-", ".", "~", "Q~", "[REDACTED:"),
    *("<password>", "</password>", "machine x login y password ", "sk-", "hf_", "SG."),
]
texts = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.sampled_from(_SECRET_TEXTS),
        st.sampled_from(_CLEAN_TEXTS),
        st.text(max_size=12),
    ),
    max_size=10,
).map(" ".join)
REDACTORS = (Redactor(), Redactor(patterns=[r"ACME-\d{4}"], allow=["re:hunter.*"]))


def _only_markers_added(text: str, out: str) -> bool:
    """Whether ``out`` is ``text`` with some stretches replaced by markers, in order."""
    position = 0
    for piece in _MARKER.split(out):
        found = text.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_redaction_is_idempotent_and_only_replaces_by_markers(text: str) -> None:
    for redactor in REDACTORS:
        once = redactor.redact(text)
        assert redactor.redact(once) == once
        assert _only_markers_added(text, once)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_CLEAN_TEXTS), min_size=1, max_size=6).map("\n".join))
def test_text_without_secrets_never_changes(text: str) -> None:
    assert Redactor().redact(text) == text
