"""An epistemic run whose every answer is saved can always be finished by the resume its error line names.

Before: when the disk filled after the last answer (360/360 saved), the summary said ``error`` and the
resume answered "already finished (status error)" (3/3): results, metrics and report were never written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from audit.testing.replies import chat_reply
from audit.testing.server import FakeOpenRouter
from tests.epistemic.test_main import run_cli

ARGS = ("system=raw_llm", "system.model=acme/tiny", "cards.num_per_type=2", "cards.suites=[standard]",
        "gateway.cache.enabled=false", "output_dir=out")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run that each case copies and then damages: the cases differ only in what the full
    disk lost, so they need not each pay for the same run (the resume, the part under test, is theirs)."""
    cwd = tmp_path_factory.mktemp("finished")
    with FakeOpenRouter(default_reply=chat_reply('{"answer": "YES"}')) as server:
        first = run_cli(cwd, *ARGS, env=server.env())
    assert first.returncode == 0, first.stderr
    (run_dir,) = (cwd / "out").iterdir()
    return run_dir


@pytest.mark.parametrize("lost", [("metrics.json", "report.html"), ("results.jsonl", "metrics.json", "report.html")])
def test_a_run_whose_outputs_were_never_written_is_finished_by_resume(tmp_path: Path, fake_openrouter, lost,
                                                                      finished_run: Path) -> None:
    run_dir = Path(shutil.copytree(finished_run, tmp_path / "out" / finished_run.name))
    finished = {name: (run_dir / name).read_text() for name in ("results.jsonl", "metrics.json")}
    # The state a full disk leaves: every answer in the journal, the outputs missing, the summary error.
    if "results.jsonl" in lost:
        (run_dir / "results.jsonl").rename(run_dir / "answers.jsonl")
    for name in lost:
        (run_dir / name).unlink(missing_ok=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.update(status="error", error=f"cannot write {run_dir / lost[0]}: disk full or file too large")
    (run_dir / "summary.json").write_text(json.dumps(summary))
    again = run_cli(tmp_path, f"resume={run_dir}", env=fake_openrouter.env())
    assert again.returncode == 0, again.stderr
    assert not fake_openrouter.requests  # every answer was on disk
    assert {name: (run_dir / name).read_text() for name in finished} == finished
    assert (run_dir / "report.html").is_file() and json.loads((run_dir / "summary.json").read_text())["status"] == "success"
