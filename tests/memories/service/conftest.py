"""A real service over a real store file, with a fast KDF and a clock the test moves."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest

from memories.config import Settings, load_settings
from memories.service import Service
from tests.memories.service.support import FAST, PASSWORD, Clock, call


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings() -> Settings:
    return dataclasses.replace(load_settings(), idle_lock_minutes=10, elevation_minutes=5)


@pytest.fixture
def make_service(settings: Settings, clock: Clock) -> Iterator[Callable[[], Service]]:
    made: list[Service] = []

    def make() -> Service:
        service = Service(settings, kdf_cost=FAST, clock=clock)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def fresh(make_service: Callable[[], Service]) -> Service:
    """A service with no store yet."""
    return make_service()


@pytest.fixture
def service(fresh: Service) -> Service:
    """An initialized, unlocked service."""
    call(fresh, {"op": "init", "password": PASSWORD, "device_name": "test device"})
    return fresh
