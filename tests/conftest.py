"""Shared fixtures. Keep this file to fixtures every test directory may need."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.paths import CACHE_ENV
from audit.testing.fake_openrouter import FakeOpenRouter


@pytest.fixture(autouse=True)
def cache_root(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache root (``$AUDIT_CACHE_DIR``, inherited by the subprocesses
    it starts): no test reads or writes the user's ``~/.cache``, and none sees another's replies."""
    root = tmp_path_factory.mktemp("cache-root")
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root


@pytest.fixture
def fake_openrouter() -> Iterator[FakeOpenRouter]:
    """A started loopback OpenRouter, fresh per test; script it with push()/handler."""
    with FakeOpenRouter() as server:
        yield server
