"""A real service over a real store file (fast KDF), as the service tests use."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from memories.config import load_settings
from memories.service import Service
from tests.memories.service.support import FAST, PASSWORD, Clock, call


@pytest.fixture
def service() -> Iterator[Service]:
    # Keyword ranking only, so results do not depend on how far background embedding got;
    # the vector and hybrid tests build their own services.
    settings = dataclasses.replace(
        load_settings(), idle_lock_minutes=10, elevation_minutes=5, rag={"embedder": "none"}
    )
    made = Service(settings, kdf_cost=FAST, clock=Clock())
    call(made, {"op": "init", "password": PASSWORD, "device_name": "search test device"})
    yield made
    made.close()


# The console-script fixtures (a real daemon in the test's home) for the CLI tests here.
from tests.memories.cli.conftest import memories, store  # noqa: E402, F401
