"""The intake's OpenAPI document matches the running server: schemathesis sends a bounded
number of generated requests to a live ``urchin intake``, with and without a token, and
checks every answer against what the document promises."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.schemas import APIOperation

from tests.urchin.intake.test_intake import TOKEN, RunningIntake, start_intake

# Bounded so that the whole file stays well under a minute on two cores.
EXAMPLES = 12
BOUNDED = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _server(home: Path, token: bool) -> RunningIntake:
    return start_intake(home, env={"URCHIN_INTAKE_TOKEN": TOKEN} if token else None)


@pytest.fixture(scope="module")
def open_intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningIntake]:
    running = _server(tmp_path_factory.mktemp("open") / "home", token=False)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def secured_intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningIntake]:
    running = _server(tmp_path_factory.mktemp("secured") / "home", token=True)
    yield running
    running.stop()


def _operations(running: RunningIntake) -> list[APIOperation]:
    schema = schemathesis.openapi.from_url(f"{running.base_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/ingest", "/ingest/batch", "/health", "/query"}
    return operations


def _fuzz(operation: APIOperation, check: Callable[[schemathesis.Case], None]) -> None:
    @BOUNDED
    @given(case=operation.as_strategy())
    def each(case: schemathesis.Case) -> None:
        check(case)

    each()


def test_intake_without_a_token_answers_as_documented(open_intake: RunningIntake) -> None:
    def check(case: schemathesis.Case) -> None:
        # No token configured: every endpoint is open, which the document says in
        # words; the security scheme applies once a token is set.
        case.call_and_validate(excluded_checks=[schemathesis.checks.ignored_auth])

    for operation in _operations(open_intake):
        _fuzz(operation, check)


def test_intake_with_a_token_answers_as_documented(secured_intake: RunningIntake) -> None:
    def with_token(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=AUTH)

    def without_token(case: schemathesis.Case) -> None:
        response = case.call_and_validate(
            excluded_checks=[schemathesis.checks.positive_data_acceptance]
        )
        if case.path == "/health":
            assert response.status_code == 200
            assert set(response.json()) == {"status"}  # no counts without the token
        else:
            assert response.status_code == 401

    for operation in _operations(secured_intake):
        _fuzz(operation, with_token)
        _fuzz(operation, without_token)


def test_document_says_health_needs_no_token_and_declares_batch_answers(
    secured_intake: RunningIntake,
) -> None:
    doc = httpx.get(f"{secured_intake.base_url}/openapi.json").json()
    health = doc["paths"]["/health"]["get"]
    assert {} in health["security"]  # anonymous allowed; the token only adds counts
    batch = doc["paths"]["/ingest/batch"]["post"]["responses"]
    assert "partial" in batch["200"]["description"].lower()
    assert "1,000" in batch["413"]["description"]
    query = {p["name"]: p for p in doc["paths"]["/query"]["get"]["parameters"]}
    assert query["q"]["required"] is True
    assert query["q"]["schema"]["pattern"] == r"\S"
    assert query["hours"]["schema"]["exclusiveMinimum"] == 0
    assert query["limit"]["schema"]["minimum"] == 1
