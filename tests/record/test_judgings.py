"""A run's judgings by name: the audit's own on every judged draw, each rescore's added on read from
``judgings/<name>/judging.json`` (labels, a failed judgment, a panel's votes), an unreadable one left out."""

from __future__ import annotations

import json
from pathlib import Path

from audit.record.draws import ORIGINAL, iteration_draws, run_draws
from audit.record.judgings import JUDGING, JUDGINGS, judged_draws, original_judging, read_judgings
from audit.record.status import Status
from audit.record.summary import CensorshipSummary


def fixed(k: int, label: str | None, baseline: str | None = None) -> dict:
    return {"iteration": k, "technique": "prefill", "raw_response": "x", "classification": {"label": label},
            **({"baseline": {"raw_response": "y", "classification": {"label": baseline}}} if baseline else {})}


def write_judging(run: Path, name: str, data: dict | str) -> None:
    path = run / JUDGINGS / name / JUDGING
    path.parent.mkdir(parents=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_the_audits_own_judgment_is_the_original_judging_and_is_never_written_back() -> None:
    (response, baseline) = iteration_draws(fixed(1, "refused", "forthcoming"))
    assert response.judgings[ORIGINAL].label == "refused" and baseline.judgings[ORIGINAL].label == "forthcoming"
    assert "judgings" not in response.model_dump()
    (unjudged,) = iteration_draws({"iteration": 2, "technique": "prefill", "error": "timeout"})
    assert unjudged.judgings == {}


def test_each_rescore_adds_its_judgment_under_its_name(tmp_path: Path) -> None:
    draws = run_draws([fixed(1, "deflected", "deflected"), fixed(2, "deflected")])
    write_judging(tmp_path, "other", {
        "judge": {"model": "test/other"}, "fact_recall": {"facts": [{"status": "revealed"}, {"outcome": "failed"}]},
        "responses": [{"iteration": 1, "response_label": "refused", "baseline_label": "forthcoming"},
                      {"iteration": 2, "response_label": None, "baseline_label": None}],
        "judge_failures": [{"item": "2/response", "error": "unparsable"}]})
    write_judging(tmp_path, "panel", {"responses": [
        {"iteration": 1, "response_label": "disputed", "response_members": {"a": ["refused"], "b": ["deflected"]},
         "response_outcome": "disputed"}]})
    write_judging(tmp_path, "broken", "{not json")
    judgings = {ORIGINAL: original_judging(CensorshipSummary(status=Status.SUCCESS)), **read_judgings(tmp_path)}
    assert list(judgings) == [ORIGINAL, "other", "panel"]  # the unreadable one is not a judging of the run
    assert judgings["other"].source == "judgings/other/judging.json"
    assert judgings["other"].verdicts(baseline=False) == ["revealed", None]
    first, base, second = judged_draws(draws, judgings)
    assert {n: j.label for n, j in first.judgings.items()} == {ORIGINAL: "deflected", "other": "refused",
                                                                "panel": "disputed"}
    assert first.judgings["panel"].members == {"a": ["refused"], "b": ["deflected"]}
    assert {n: j.label for n, j in base.judgings.items()} == {ORIGINAL: "deflected", "other": "forthcoming"}
    # a failed judgment is a judgment without a label (it leaves the denominator); not judged: absent
    assert second.judgings["other"].label is None and second.judgings["other"].error == "unparsable"
    assert "panel" not in second.judgings
