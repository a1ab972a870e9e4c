"""The suite's xdist groups take effect: tests that share a module-scoped fixture, and the real-model
tests, each run on one worker (``tests/conftest.py``). Two things broke this silently before: the
conftest's marks came after xdist's worker had read them, and pytest 9.2's node ids, which xdist 3.8
can no longer suffix with the group (pyproject pins pytest below 9.2). Either way nothing failed; the
suite only ran two llama.cpp servers at half speed each, and the bad-input corpus twice."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SHARED = """
import pytest

@pytest.fixture(scope="module")
def built():
    return object()

{tests}
"""


def test_grouped_tests_share_a_worker(tmp_path: Path) -> None:
    tests = "\n".join(f"def test_shared_{n}(built):\n    pass\n\ndef test_alone_{n}():\n    pass\n" for n in range(6))
    (tmp_path / "test_shared.py").write_text(SHARED.format(tests=tests))
    (tmp_path / "real_model").mkdir()
    (tmp_path / "real_model" / "test_model.py").write_text(
        "\n".join(f"def test_model_{n}():\n    pass\n" for n in range(6)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "2", "--dist", "loadgroup",
                           "-v", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", done.stdout):
        test = nodeid.split("::")[-1]
        workers[test.split("@")[0].rsplit("_", 1)[0]].add(worker)
        if test.startswith(("test_shared", "test_model")):
            assert "@" in test, f"{nodeid}: no xdist group suffix, so the group is not in effect"
    assert sum(1 for _ in re.finditer(r" PASSED ", done.stdout)) == 18, done.stdout[-3000:]
    assert len(workers["test_shared"]) == 1 and len(workers["test_model"]) == 1, dict(workers)
