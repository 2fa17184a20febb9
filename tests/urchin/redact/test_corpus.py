"""The labelled corpus: redaction catches what it must and leaves look-alikes alone."""

from __future__ import annotations

import pytest

from tests.urchin.redact.corpus import Sample, build, evaluate
from urchin.redact import Redactor, redact

SAMPLES = build()
SECRETS = [s for s in SAMPLES if s.secrets]
CLEAN = [s for s in SAMPLES if not s.secrets]
CLASSES = ("provider", "command_line", "assignment", "header", "structure", "entropy")


def test_corpus_is_large_varied_and_deterministic() -> None:
    assert len({s.kind for s in SECRETS}) >= 90
    assert len(CLEAN) >= 150
    assert {s.cls for s in SECRETS} == set(CLASSES)
    assert build() == SAMPLES
    kinds = {s.kind for s in CLEAN}
    for kind in ("git_sha", "uuid", "digest", "data_uri", "integrity", "docker_digest"):
        assert kind in kinds
    for kind in ("placeholder", "prose", "code", "public_key"):
        assert kind in kinds


def test_recall_and_false_positives_meet_the_bar() -> None:
    scores, missed, changed = evaluate(redact, SAMPLES)
    recall = 1 - len(missed) / len(SECRETS)
    false_positives = len(changed) / len(CLEAN)
    assert recall >= 0.95, [(s.cls, s.kind) for s in missed]
    assert false_positives <= 0.005, [(s.kind, s.text) for s in changed]
    for cls in CLASSES:
        assert scores[cls].rate >= 0.9, cls


@pytest.mark.parametrize("sample", SECRETS, ids=[f"{s.cls}-{s.kind}" for s in SECRETS])
def test_each_secret_leaves_a_marker_and_nothing_of_itself(sample: Sample) -> None:
    out = redact(sample.text)
    for secret in sample.secrets:
        assert secret not in out
    assert "[REDACTED:" in out
    assert redact(out) == out


@pytest.mark.parametrize("sample", CLEAN, ids=[f"{s.kind}-{i}" for i, s in enumerate(CLEAN)])
def test_each_look_alike_is_left_as_it_is(sample: Sample) -> None:
    assert redact(sample.text) == sample.text


def test_a_provider_token_in_the_allowlist_is_kept() -> None:
    sample = next(s for s in SECRETS if s.kind == "huggingface")
    token = sample.secrets[0]
    assert token in Redactor(allow=[token]).redact(sample.text)
    assert token not in Redactor(allow=["something-else"]).redact(sample.text)
