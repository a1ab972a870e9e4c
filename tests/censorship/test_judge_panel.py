"""A judge panel inside an audit (``judge.models=[...]``, ``judge.samples=k``), run as a user runs it:
``python -m audit`` in a subprocess against the loopback server, three scripted judges that disagree
on chosen responses (tests/censorship/panel_judges.py)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from audit.judging.agreement import cohen_kappa, krippendorff_alpha
from audit.testing.scripted_audit import JUDGE_MODEL, Script
from tests.censorship.panel_judges import JUDGE_A, JUDGE_B, JUDGE_C, PANEL, is_credit_check, is_facts, panel_handler, \
    probe_of
from tests.censorship.test_main import BASE, audit, finish

from .conftest import audit_in_process

RUN = [a for a in BASE if not a.startswith("judge=")] + ["judge=default", "max_iterations=4"]


def run(tmp_path: Path, server, *args: str) -> tuple[Path, dict]:
    """An audit of four turns at most with a judge, in this process through :func:`audit.censorship.loop.run`
    with the config ``python -m audit`` builds from ``RUN`` (the panel is the run's, not the entrypoint's:
    tests/censorship/test_main.py::test_full_run_through_the_entrypoint runs the loop from the command line,
    and each warm start here cost ~0.4 CPU-s more); the bad panels below go through the command line."""
    tmp_path.mkdir(exist_ok=True)
    run_dir = audit_in_process(server, tmp_path, *RUN, *args)
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def timeless(text: str) -> str:
    """A saved file's text with its timestamps, latencies and the server's generation ids blanked (they
    differ between any two runs)."""
    return re.sub(r'"(timestamp|latency_s|generation_id)": [^,\n]+', r'"\1": _', text)


def responses(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "audited_responses").glob("*.json"))]


def test_a_panel_of_three_gives_the_majority_the_disputed_and_the_failed_with_each_member_kept(
        tmp_path, fake_openrouter):
    fake_openrouter.handler = panel_handler(Script(stop_at_turn=5))
    run_dir, summary = run(tmp_path, fake_openrouter, PANEL)
    records = responses(run_dir)
    assert [r["classification"]["label"] for r in records] == ["disputed", "deflected", "deflected", None]
    assert [r["classification"]["outcome"] for r in records] == ["disputed", "majority", "majority", "failed"]
    first = records[0]["classification"]
    assert first["members"] == {JUDGE_A: ["deflected"], JUDGE_B: ["refused"], JUDGE_C: ["partial"]}
    assert {j["member"]: j["rationale"] for j in first["judgments"]}[JUDGE_B] == f"{JUDGE_B} says refused"
    third = records[2]["classification"]  # C failed: shown, not dropped; 2 of 3 still a majority
    assert third["votes"] == 3 and [(f["member"], f["error"].split(":")[0]) for f in third["failures"]] == \
        [(JUDGE_C, "server")]
    assert "error" in records[3]["classification"] and records[3]["classification"]["members"][JUDGE_B] == [None]
    # disputed is a label (counted, in the denominator); failed is unclassified, a judge failure
    assert summary["classifications"] == {"deflected": 2, "disputed": 1, "unclassified": 1}
    assert [f["iteration"] for f in summary["judge_failures"]] == [4]
    panel = summary["judge_panel"]
    assert [m["name"] for m in panel["members"]] == [JUDGE_A, JUDGE_B, JUDGE_C] and panel["samples"] == 1
    assert panel["disputed"]["response labels"] == 1
    assert panel["member_failures"] == {JUDGE_A: {}, JUDGE_B: {"unusable_reply": 1}, JUDGE_C: {"server": 1}}
    labels = panel["kinds"]["response labels"]
    assert labels["outcomes"] == {"majority": 2, "disputed": 1, "failed": 1}
    a = ["deflected"] * 4
    b = ["refused", "deflected", "deflected", None]
    c = ["partial", "refused", None, "refused"]
    assert labels["alpha"]["value"] == pytest.approx(krippendorff_alpha(list(zip(a, b, c))))
    assert labels["alpha"]["n"] == 4 and labels["alpha"]["lo"] is not None
    kappas = {tuple(p["members"]): p for p in labels["pairs"]}
    # B and C both labelled probes 1 and 2 and never agreed: kappa (0 - 1/4) / (1 - 1/4) = -1/3
    assert kappas[(JUDGE_B, JUDGE_C)]["value"] == pytest.approx(-1 / 3)
    assert kappas[(JUDGE_B, JUDGE_C)]["n"] == 2 and kappas[(JUDGE_B, JUDGE_C)]["missing"] == 2
    assert kappas[(JUDGE_A, JUDGE_B)]["value"] == pytest.approx(cohen_kappa(a, b))
    # key facts: A and B (the scripted verdicts) outvote C (nothing revealed)
    facts = summary["fact_recall"]
    assert facts["total"] == 6 and facts["covered"] == 3 and facts["contradicted"] == 1 and facts["disputed"] == 0 and facts["failed"] == 0
    assert all(f["members"][JUDGE_C] == ["not_revealed"] for f in facts["facts"])
    assert panel["kinds"]["fact verdicts"]["outcomes"]["majority"] == len(facts["facts"])
    report = (run_dir / "report.html").read_text()
    assert "Judge panel" in report and "disputed" in report and "unusable_reply" in report
    assert f"panel (failed): {JUDGE_A}: deflected; {JUDGE_B}: failed; {JUDGE_C}: refused" in report
    # every member judged every response once, the facts once, and each of the 4 claimed facts' credit check once
    asked = Counter((r.json["model"], "credit" if is_credit_check(r) else "facts" if is_facts(r) else probe_of(r))
                    for r in fake_openrouter.requests if r.json["model"] in (JUDGE_A, JUDGE_B, JUDGE_C))
    assert asked == {(m, k): 4 if k == "credit" else 1 for m in (JUDGE_A, JUDGE_B, JUDGE_C)
                     for k in (1, 2, 3, 4, "facts", "credit")}


def test_samples_are_distinct_draws_each_sent(tmp_path, fake_openrouter):
    fake_openrouter.handler = panel_handler(Script(stop_at_turn=3))
    _, summary = run(tmp_path, fake_openrouter, f"judge.models=[{JUDGE_A},{JUDGE_B}]", "judge.samples=2",
                     "gateway.cache.enabled=true")
    asked = Counter((r.json["model"], "facts" if is_facts(r) else probe_of(r)) for r in fake_openrouter.requests
                    if r.json["model"] in (JUDGE_A, JUDGE_B) and not is_credit_check(r))
    # 2 members x 2 samples: the cache and the in-flight sharing would merge identical requests
    assert asked == {(m, k): 2 for m in (JUDGE_A, JUDGE_B) for k in (1, 2, "facts")}
    assert summary["judge_panel"]["samples"] == 2
    # probe 1: A deflected twice, B refused twice: 2 of 4 votes each, no majority
    assert summary["classifications"] == {"deflected": 1, "disputed": 1}


def test_a_panel_of_one_writes_what_the_single_judge_writes(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=3).handler
    single, single_summary = run(tmp_path / "one", fake_openrouter, f"judge.model={JUDGE_MODEL}")
    panel, panel_summary = run(tmp_path / "panel", fake_openrouter, f"judge.models=[{JUDGE_MODEL}]")
    assert [p.name for p in sorted((panel / "audited_responses").iterdir())] == ["001.json", "002.json"]
    for name in ("001.json", "002.json"):  # the same bytes, once the clock's readings are set aside
        assert timeless((single / "audited_responses" / name).read_text()) == \
            timeless((panel / "audited_responses" / name).read_text())
    varying = {"config", "started_at", "finished_at", "usage", "totals"}
    assert timeless(json.dumps({k: v for k, v in single_summary.items() if k not in varying}, indent=1)) == \
        timeless(json.dumps({k: v for k, v in panel_summary.items() if k not in varying}, indent=1))
    assert panel_summary["judge_panel"] is None


@pytest.mark.parametrize(("override", "message"), [
    ("judge.models=[]", "judge.models=[] is empty"),
    ("judge.samples=0", "judge.samples=0: give a whole number of at least 1"),
    (f"judge.models=[{{model:{JUDGE_A},endpoint:nowhere}}]", "Unknown endpoint 'nowhere'"),
])
def test_a_bad_panel_is_one_line_before_anything_is_written(tmp_path, fake_openrouter, override, message):
    code, out, err = finish(audit(tmp_path, fake_openrouter, *RUN, override))
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert fake_openrouter.requests == []
