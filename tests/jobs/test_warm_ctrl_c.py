"""A Ctrl-C of a sweep on the warm launcher (the default), whose jobs run at once: every running job
stops, leaving its summary ``cancelled``, and the sweep ends with exit 1 and no traceback."""

from __future__ import annotations

import json
import signal

from audit.testing.replies import Hold
from tests.epistemic.test_interrupts import answer, start
from tests.timing import scaled


def test_ctrl_c_stops_every_running_job_of_a_warm_sweep(tmp_path, fake_openrouter):
    hold = Hold(answer)
    fake_openrouter.handler = hold
    sweep = start(tmp_path, fake_openrouter, "-m", "system=raw_llm", "system.model=acme/a,acme/b",
                  "cards.num_per_type=1", "gateway.cache.enabled=false")
    try:
        assert hold.wait(scaled(60)), "no job asked anything"
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=scaled(60))
    finally:
        hold.release()
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 1 and "Traceback" not in err and "interrupted" in err, err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    summaries = sorted((sweep_dir).glob("*/*/summary.json"))
    assert summaries, err
    assert {json.loads(s.read_text())["status"] for s in summaries} == {"cancelled"}, err
