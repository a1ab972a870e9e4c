"""Shared fixtures. Keep this file to fixtures every test directory may need."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.paths import CACHE_ENV
from audit.testing.server import FakeOpenRouter


SHARED_SCOPES = ("class", "module", "package")


START_FIRST = ("tests/real_model/test_local_audit.py", "tests/real_model/test_real_model.py::test_epistemic",
               "tests/real_model/test_local_benchmark.py", "tests/real_model/")
"""The longest work of the suite, started first and in this order (measured with ``AUDIT_TEST_CPU_LOG``): the
real-model tests take minutes of one worker between them (the llama.cpp server computes on one core), so
one that starts late sets the suite's finish; the other worker runs everything else meanwhile. Within the
group the longest go first, so when xdist hands that worker more work (at two tests left) it waits behind
short ones."""


def pytest_configure(config: pytest.Config) -> None:
    """Keep the order :func:`pytest_collection_modifyitems` sets (xdist would sort groups by size alone);
    with ``AUDIT_TEST_CPU_LOG=file``, log each test's CPU seconds there (``tests/cpu_time.py``)."""
    from tests.cpu_time import CPU_LOG_ENV, CpuLog

    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if path := os.environ.get(CPU_LOG_ENV):
        config.pluginmanager.register(CpuLog(path), "cpu_time")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``-n auto --dist loadgroup``, tests that share an expensive fixture share a worker, so it
    is made once: the real-model tests (one session-scoped llama.cpp server; two on a 2-core machine
    would each run at half speed), and the tests of a module with a module-scoped fixture (built once
    per worker that runs any of them: the bad-input corpus runs every case of its module from one
    fixture, so split over two workers it ran twice).

    It runs first (``tryfirst``): xdist's worker reads the ``xdist_group`` marks in this same hook, and a
    plugin registered after this conftest is called before it, so without ``tryfirst`` the marks came too
    late and no test was grouped (checked by ``tests/test_xdist_groups.py``).

    Then the order xdist hands the work out in: :data:`START_FIRST`, then the groups by their number of
    tests, largest first (what xdist's own reordering does), then single tests as collected."""
    group: dict[str, str] = {}
    for item in items:
        if "real_model" in item.path.parts:
            item.add_marker(pytest.mark.xdist_group("embedded_model"))
            group[item.nodeid] = "embedded_model"
            continue
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        if any(d.scope in SHARED_SCOPES for defs in definitions for d in defs):
            group[item.nodeid] = item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(group[item.nodeid]))
    sizes = Counter(group.values())

    def rank(item: pytest.Item) -> tuple[int, int]:
        first = next((k for k, prefix in enumerate(START_FIRST) if item.nodeid.startswith(prefix)), len(START_FIRST))
        return first, -sizes[group.get(item.nodeid, item.nodeid)]

    items.sort(key=rank)


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


@pytest.fixture(autouse=True, scope="session")
def summaries_match_the_published_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the session: every ``summary.json`` the program wrote under the session's temporary
    directories (in process or in a subprocess) validates against ``schemas/summary.schema.json``.
    Files without ``schema_version`` were written by hand by a test (old formats, damaged files)."""
    yield
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parent.parent / "schemas" / "summary.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for path in tmp_path_factory.getbasetemp().rglob("summary.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # damaged on purpose (nested 100,000 deep, binary)
            continue
        if isinstance(data, dict) and "schema_version" in data:
            problems += [f"{path}: {error.json_path}: {error.message}" for error in validator.iter_errors(data)]
    assert not problems, "summary.json files that do not match the published schema:\n" + "\n".join(problems[:20])


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A mount point for small tmpfs file systems (:func:`mount_small`), unmounted after the test: the
    full-disk tests fill a real file system rather than fake ``ENOSPC`` inside the code."""
    mount = tmp_path / "disk"
    mount.mkdir()
    yield mount
    subprocess.run(["umount", str(mount)], capture_output=True, check=False)


def mount_small(mount: Path, size: str) -> None:
    """Mount (or mount again, at another size) a tmpfs of ``size`` at ``mount``; skip the test with the
    reason where this machine does not allow it."""
    subprocess.run(["umount", str(mount)], capture_output=True, check=False)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip() or 'mount failed'})")
