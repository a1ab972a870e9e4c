"""A killed ``local=`` audit resumes: the embedded model is started again for the roles the saved
run routed to it (a resume's command line cannot say ``local=``; the saved config does)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from audit.testing.replies import Hold
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from tests.real_model.conftest import TIMEOUT_S, assert_sampled_in_family, no_key, only_run_dir, read, run_cli
from tests import entrypoints


def test_a_killed_local_audit_resumes_with_the_embedded_model(tmp_path: Path) -> None:
    with FakeOpenRouter() as fake:
        script = Script()
        hold = Hold(script.handler, lambda r: (r.json or {}).get("model") == AUDITOR_MODEL, skip=1)
        fake.handler = hold  # the auditor's turn 2 waits: response 1 is on disk
        env = {**no_key(), **fake.env()}
        proc = entrypoints.start([sys.executable, "-m", "audit", "local=[audited]", f"auditor.model={AUDITOR_MODEL}",
                                  "judge=off", "max_iterations=2", "sampling.max_tokens=40", "output_dir=out",
                                  "gateway.cache.enabled=false"], cwd=tmp_path, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert hold.wait(TIMEOUT_S), "the audit never reached its second turn"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        finally:
            hold.release()
        run_dir = only_run_dir(tmp_path / "out")
        assert read(run_dir / "summary.json")["status"] == "started"
        fake.handler = script.handler
        done = run_cli("audit", f"resume={run_dir}", cwd=tmp_path, env=fake.env())
        assert done.returncode == 0, done.stdout + done.stderr
    assert "embedded model" in done.stdout
    summary = read(run_dir / "summary.json")
    assert summary["stop_reason"] == "max_iterations" and summary["total_iterations"] == 2
    assert_sampled_in_family(run_dir, 2)
