"""A real service over a real store file, and a fake model endpoint on loopback."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memories.config import load_settings
from memories.service import Service
from tests.memories.rag.fake_models import FakeModels, Script, fake_models
from tests.memories.service.support import FAST, PASSWORD, Clock, call


@pytest.fixture
def models() -> Iterator[FakeModels]:
    with fake_models(Script()) as running:
        yield running


@pytest.fixture
def make_service() -> Iterator[Callable[..., Service]]:
    made: list[Service] = []

    def make(**rag: Any) -> Service:
        rag.setdefault("embedder", "none")
        settings = dataclasses.replace(load_settings(), idle_lock_minutes=10, rag=rag)
        service = Service(settings, kdf_cost=FAST, clock=Clock())
        call(service, {"op": "init", "password": PASSWORD, "device_name": "rag test device"})
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def service(make_service: Callable[..., Service], models: FakeModels) -> Service:
    """A service whose answer model is the fake endpoint (no retries: failures are final)."""
    return make_service(
        generate_url=f"{models.url}/v1/chat/completions", generate_model="fake-llm", retries=0
    )


# The console-script fixture (a real daemon in the test's home) for the CLI tests here.
from tests.memories.cli.conftest import memories  # noqa: E402, F401
