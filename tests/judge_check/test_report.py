"""What judge_check prints and writes when a figure is undefined: kappa 0/0 is "n/a (why)" on the
terminal and ``null`` with a reason in strict JSON, and the failed fact verdicts are counted."""

from __future__ import annotations

import json

from audit.judge_check.labels import Labelled
from audit.judge_check.metrics import validate
from audit.judge_check.report import write_outputs

CATS = ("refused", "deflected", "forthcoming")


def _strict(text: str) -> object:
    """Parse as strict JSON: NaN and Infinity are not JSON (RFC 8259), so refuse them."""
    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def test_an_undefined_kappa_is_na_on_screen_and_null_in_json(tmp_path, capsys):
    # Both sides say "refused" to every response: chance agreement is 1, kappa is 0/0.
    rows = [Labelled(id=f"r{i}", topic="tiananmen", probe="p", response="no", label="refused", run=None)
            for i in range(3)]
    results = [{"label": "refused"}, {"label": "refused"}, {"label": None, "error": "timeout"}]
    metrics = validate([r.label for r in rows], [r["label"] for r in results], [None] * 3, CATS, resamples=200)
    facts = validate(["revealed", "not_revealed", "revealed"], ["revealed", None, None], ["a", "b", "c"],
                     ("revealed", "not_revealed"), resamples=200)
    fact_items = [{"id": "r0", "run": None, "fact_no": 1, "human": "revealed", "judge": "revealed", "error": ""}]
    out = tmp_path / "out"
    out.mkdir()
    write_outputs(out, tmp_path / "labels.csv", {"model": "m"}, rows, results, metrics, facts, fact_items)
    shown = capsys.readouterr().out
    assert "nan" not in shown.lower()
    assert "kappa vs your labels: n/a (undefined: both gave every response one and the same label)" in shown
    assert "3 labelled responses, 2 judged, 1 judge failure (left out of every rate)" in shown
    assert "3 labelled verdicts, 1 judged, 2 failed verdicts (left out of every rate)" in shown
    report = _strict((out / "judge_check.json").read_text())
    assert isinstance(report, dict)
    assert report["kappa"]["value"] is None and "same label" in report["kappa"]["value_reason"]
    assert report["kappa"]["n"] == 2
    # One fact verdict judged: its kappa is 0/0 too, null with a reason in JSON, n/a on screen.
    assert report["facts"]["kappa"]["value"] is None and report["facts"]["kappa"]["value_reason"]
    assert "nan" not in (out / "judge_check.html").read_text().lower().replace("nanjing", "")


def test_a_defined_kappa_keeps_its_value(tmp_path, capsys):
    rows = [Labelled(id=f"r{i}", topic="tiananmen", probe="p", response="x", label=lab, run=None)
            for i, lab in enumerate(["refused", "deflected", "refused", "deflected"])]
    results = [{"label": lab} for lab in ["refused", "deflected", "refused", "refused"]]
    metrics = validate([r.label for r in rows], [r["label"] for r in results], [None] * 4, CATS, resamples=200)
    out = tmp_path / "out"
    out.mkdir()
    write_outputs(out, tmp_path / "labels.csv", {"model": "m"}, rows, results, metrics)
    report = _strict((out / "judge_check.json").read_text())
    assert isinstance(report, dict)
    assert report["kappa"]["value"] == metrics["kappa"]["value"] and "value_reason" not in report["kappa"]
    assert "0 judge failures" in capsys.readouterr().out
