"""Fixtures for running whole audits against the loopback server (the script is in audit.testing)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from audit.testing.replies import TEST_API_KEY
from audit.testing.server import FakeOpenRouter
from audit.censorship.loop import run
from audit.testing.scripted_audit import Script, audit_config


@pytest.fixture
def script(fake_openrouter: FakeOpenRouter) -> Script:
    """A :class:`Script` installed as the loopback server's handler."""
    s = Script()
    fake_openrouter.handler = s.handler
    return s


@contextmanager
def loopback_env(server: FakeOpenRouter, cwd: Path) -> Iterator[Path]:
    """Key and base URL of the loopback server in the environment and ``cwd`` the working directory, for
    a run made in this process (:func:`audit.censorship.loop.run`) as ``python -m audit`` would see them."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENROUTER_API_KEY", TEST_API_KEY)
        env.setenv("OPENROUTER_API_BASE", server.base_url)
        env.chdir(cwd)
        yield cwd


def audit_in_process(server: FakeOpenRouter, cwd: Path, *overrides: str) -> Path:
    """The audit ``python -m audit <overrides>`` would make from ``cwd``, made in this process through
    :func:`audit.censorship.loop.run` (the function the entrypoint runs): its run dir, under ``cwd / "out"``
    (:func:`audit_config` sets ``output_dir`` after composing). The config is the command line's (``auditor.context`` back to its
    default ``auto``, which :func:`audit_config` sets to ``full``); what the entrypoint adds around the
    loop (one-line errors, exit codes, the Inspect export, sweeps) is for tests that start it."""
    with loopback_env(server, cwd):
        return run(audit_config(cwd / "out", "auditor.context=auto", *overrides))


@pytest.fixture
def audit_env(fake_openrouter: FakeOpenRouter, tmp_path: Path) -> Iterator[Path]:
    """Key and base URL of the loopback server in the environment; cwd a fresh tmp dir."""
    with loopback_env(fake_openrouter, tmp_path):
        yield tmp_path


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
