"""A run's judgings, by name: the audit's own (:data:`~audit.record.draws.ORIGINAL`, from its
``summary.json`` and saved draws) and each one ``python -m audit.rescore`` wrote beside it in
``<run dir>/judgings/<name>/judging.json``.

:class:`RunJudging` is what a judging says of the run as a whole (its judge, fact scores, failures);
:func:`judged_draws` puts each judging's label of a draw on that draw (``Draw.judgings``, a panel's
with its members' votes),
so a reader picks a judging by name and counts draws, never joining a rescore's file to the run's.
A ``judging.json`` that cannot be read is left out (the run then has no such judging, which a
comparison lists with the command that makes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from audit.io import walk
from audit.io.atomic import read_json_saved
from audit.record.draws import ORIGINAL, Draw, Judgment
from audit.record.summary import CensorshipSummary

JUDGINGS, JUDGING = "judgings", "judging.json"
SIDES = ("response", "baseline")


class RunJudging(BaseModel):
    """One judging of a run: its judge's settings, fact scores and failures, and the file these come
    from (``source``, relative to the run dir: named when a label is refused). A panel's agreement is
    not read from here: each draw carries its members' votes (:func:`judged_draws`)."""

    model_config = ConfigDict(extra="allow")
    source: str = "summary.json"
    judge: Any = None
    fact_recall: dict[str, Any] | None = None
    baseline_fact_recall: dict[str, Any] | None = None
    judge_failures: list[dict[str, Any]] = Field(default_factory=list)
    responses: list[dict[str, Any]] = Field(default_factory=list)
    """A rescore's labels per row (an iteration's response and baseline, or an auto draw)."""

    def verdicts(self, baseline: bool) -> list[str | None]:
        """Each key fact's verdict on one side (None: the verdict failed), in fact order."""
        facts = ((self.baseline_fact_recall if baseline else self.fact_recall) or {}).get("facts") or []
        return [f.get("status") if f.get("outcome") != "failed" else None for f in facts]


def original_judging(summary: CensorshipSummary) -> RunJudging:
    """The audit's own judging, from its summary."""
    return RunJudging(judge=(summary.config or {}).get("judge"), fact_recall=summary.fact_recall,
                      baseline_fact_recall=summary.baseline_fact_recall, judge_failures=summary.judge_failures)


def read_judgings(run: Path) -> dict[str, RunJudging]:
    """Every readable rescore judging of the run in ``run``, by name (sorted)."""
    found = {}
    for name in sorted(walk.names(run / JUDGINGS)):
        try:
            data = read_json_saved(run / JUDGINGS / name / JUDGING)
        except (OSError, ValueError):
            continue
        if isinstance(data, Mapping):
            found[name] = RunJudging.model_validate({**data, "source": f"{JUDGINGS}/{name}/{JUDGING}"})
    return found


def _judgment(row: Mapping[str, Any], side: str, failed: Mapping[str, Any], key: str) -> Judgment | None:
    """A rescore row's judgment of one side: its label (a panel's with members and outcome), or the
    error of a failed judgment; None when the judging did not judge that draw."""
    label = row.get(f"{side}_label")
    if label is None and key not in failed:
        return None
    return Judgment(label=label, members=row.get(f"{side}_members"), outcome=row.get(f"{side}_outcome"),
                    error=None if label is not None else failed[key])


def judged_draws(draws: Sequence[Draw], judgings: Mapping[str, RunJudging]) -> list[Draw]:
    """``draws`` with each judging's judgment added under its name (``Draw.judgings``)."""
    rescores = {name: ({str(r.get("draw") or r.get("iteration")): r for r in j.responses},
                       {str(f.get("item")): f.get("error") for f in j.judge_failures})
                for name, j in judgings.items() if name != ORIGINAL}
    out = []
    for draw in draws:
        found = dict(draw.judgings)
        side = "baseline" if draw.is_baseline else "response"
        for name, (rows, failed) in rescores.items():
            row = rows.get(str(draw.id if draw.auto else draw.iteration))
            judgment = _judgment(row, side, failed, draw.key) if row is not None else None
            if judgment is not None:
                found[name] = judgment
        out.append(draw.model_copy(update={"judgings": found}))
    return out


Pair = tuple[list[str | None], list[str | None]]
"""Two judgings' labels of the same items, in one order (None: not judged by that one, or failed)."""


def label_pair(draws: Sequence[Draw], names: Sequence[str]) -> Pair:
    """Judgings ``names[0]`` and ``names[1]``'s labels of the draws either judged, in the order drawn."""
    both = [d for d in draws if any(n in d.judgings for n in names)]
    a, b = ([d.judgings[n].label if n in d.judgings else None for d in both] for n in names)
    return a, b


def verdict_pair(judgings: Mapping[str, RunJudging], names: Sequence[str], baseline: bool) -> Pair:
    """The two judgings' key-fact verdicts of one side, fact by fact (None: none, or failed)."""
    a, b = (judgings[n].verdicts(baseline) for n in names)
    n = max(len(a), len(b))
    return a + [None] * (n - len(a)), b + [None] * (n - len(b))
