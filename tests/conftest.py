"""Shared fixtures. Keep this file to fixtures every test directory may need."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from audit.testing.fake_openrouter import FakeOpenRouter


@pytest.fixture
def fake_openrouter() -> Iterator[FakeOpenRouter]:
    """A started loopback OpenRouter, fresh per test; script it with push()/handler."""
    with FakeOpenRouter() as server:
        yield server
