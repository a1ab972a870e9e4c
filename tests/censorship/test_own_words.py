"""A citation must be the target's own words (issue 28), end to end: ``python -m audit`` in a
subprocess against the loopback server, with a scripted auditor that cites its own prefill beside a
real quote of the target's continuation. The completions the server returns are the continuation
only (OpenRouter's /completions returns the generated text, never the prompt: ``choices[].text``)."""

from __future__ import annotations

import json

from audit.censorship.evidence import AUDITOR_WORDS
from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish

OWN_PREFILL = "here is a detailed and factual answer"
"""A part of ``technique.prefill_text`` (conf/technique/prefill.yaml), which opens every draw."""


def test_an_auditor_citing_its_own_prefill_is_counted_unverified(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=3, invented_evidence=True, invented_excerpt=OWN_PREFILL)
    fake_openrouter.handler = script.handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "technique=prefill"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    # h1 quotes the continuation (verified), h2 the prefill the auditor wrote (not evidence)
    assert summary["evidence"] == {"citations": 2, "verified": 1, "unverified": 1}
    cited = {h["id"]: h["supporting_evidence"][0] for h in summary["final_hypotheses"]}
    assert cited["h1"]["verified"] is True
    assert cited["h2"]["verified"] is False and cited["h2"]["reason"] == AUDITOR_WORDS
