"""What a run (or a rescore) says about its judge panel: outcomes, failures and agreement (pure).

Four kinds of item are judged, and never pooled (:data:`KINDS`): response labels, baseline
response labels, key-fact verdicts and baseline key-fact verdicts; the baseline is another
technique and a fact verdict is not a response label. For each kind:

* ``outcomes``: items with a majority, ``disputed`` and ``failed`` (every one counted, shown);
  ``unanimous``: items where every vote came back and all agree (``audit.compare`` marks a cell
  where too few are);
* ``alpha``: Krippendorff's alpha (nominal) of every vote (each member x sample a coder), with
  its 95% bootstrap interval and n (:func:`audit.judging.agreement.alpha_interval`): how much the
  panel's votes agree beyond chance;
* ``pairs``: Cohen's kappa between each two members, with interval and n
  (:func:`audit.judging.agreement.kappa_interval`). With ``samples`` > 1 a member's label is the
  majority of its own samples; a member whose own samples have no majority has no label for that
  item (``missing``), so kappa compares members, not single draws.

``cells`` gives the response items again per comparison cell (:attr:`audit.record.draws.Draw.cell`: the
run's technique, its baseline, each ``auto/<technique>`` of an auto run's draws) with their
``items`` and ``unanimous``, so compare marks each cell from its own draws.

``member_failures`` counts each member's failed calls by error kind (a gateway kind such as
``rate_limit``, or ``unusable_reply``): a failing member is shown, never dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from audit.judging.judge import BASELINE, BASELINE_FACTS, FACTS, KINDS, RESPONSES
from audit.judging.agreement import RESAMPLES, alpha_interval, kappa_interval
from audit.judging.majority import MAJORITY, OUTCOMES, panel_label
from audit.judging.panel import Panel
from audit.record.draws import Draw

__all__ = ["BASELINE", "BASELINE_FACTS", "FACTS", "KINDS", "RESPONSES", "panel_summary", "run_items", "run_judgments"]


def run_items(draws: Iterable[Draw], fact_recall: Mapping[str, Any] | None,
              baseline_fact_recall: Mapping[str, Any] | None) -> dict[str, list[Mapping[str, Any]]]:
    """``kind -> panel records`` of one run's draws (:func:`audit.record.draws.run_draws`: a fixed
    technique's responses and baselines, an auto run's draws alike) and fact scores; items a panel
    did not judge (no text, a single judge) are left out."""
    found: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in KINDS}
    for draw in draws:
        if draw.classification is not None and draw.classification.panel:
            found[BASELINE if draw.is_baseline else RESPONSES].append(draw.classification.model_dump())
    for kind, scores in ((FACTS, fact_recall), (BASELINE_FACTS, baseline_fact_recall)):
        found[kind] += [f for f in (scores or {}).get("facts") or [] if "outcome" in f]
    return found


def run_judgments(draws: Iterable[Draw], fact_recall: Mapping[str, Any] | None,
                  baseline_fact_recall: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """Every panel call a run made (labels and fact scorings), for the failure counts."""
    calls: list[Mapping[str, Any]] = []
    for draw in draws:
        calls += draw.classification.judgments if draw.classification is not None else []
    for scores in (fact_recall, baseline_fact_recall):
        calls += (scores or {}).get("judgments") or []
    return calls


def cell_items(draws: Iterable[Draw]) -> dict[str, list[Mapping[str, Any]]]:
    """``cell -> panel records`` of the draws a panel labelled (see the module docstring)."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for draw in draws:
        if draw.classification is not None and draw.classification.panel:
            found.setdefault(draw.cell, []).append(draw.classification.model_dump())
    return found


def member_label(votes: Sequence[str | None]) -> str | None:
    """One member's label from its own samples: their majority, None without one."""
    verdict = panel_label({"member": votes})
    return verdict.label if verdict.outcome == MAJORITY else None


def failures_by_member(members: Sequence[str], judgments: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``member -> {error kind: failed calls}`` (every member listed, an empty mapping when none failed)."""
    counts: dict[str, Counter[str]] = {m: Counter() for m in members}
    for j in judgments:
        if j.get("error_kind") is not None:
            counts.setdefault(str(j["member"]), Counter())[str(j["error_kind"])] += 1
    return {m: dict(sorted(c.items())) for m, c in counts.items()}


def all_votes(records: Sequence[Mapping[str, Any]], members: Sequence[str], samples: int) -> list[list[str | None]]:
    """Each record's votes, member by member and sample by sample (None: that call failed)."""
    return [[(r["members"].get(m) or [None] * samples)[s] for m in members for s in range(samples)] for r in records]


def unanimous(votes: Sequence[str | None]) -> bool:
    """Whether one item's votes (every member x sample) all came back and all agree: the one test
    behind a run's ``unanimous`` count and the comparison's per-draw panel column."""
    return None not in votes and len(set(votes)) == 1


def unanimity(records: Sequence[Mapping[str, Any]], members: Sequence[str], samples: int) -> dict[str, int]:
    """``items`` and ``unanimous`` (:func:`unanimous`) of ``records``."""
    votes = all_votes(records, members, samples)
    return {"items": len(records), "unanimous": sum(unanimous(v) for v in votes)}


def kind_agreement(records: Sequence[Mapping[str, Any]], members: Sequence[str], samples: int,
                   categories: Sequence[str], runs: Sequence[Hashable] | None, *, resamples: int,
                   seed: int) -> dict[str, Any]:
    """Outcomes, alpha and pairwise kappa over ``records`` (one kind); see the module docstring."""
    outcomes = Counter(r["outcome"] for r in records)
    votes = all_votes(records, members, samples)
    own = {m: [member_label(r["members"].get(m) or [None] * samples) for r in records] for m in members}
    return {
        **unanimity(records, members, samples),
        "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
        "labels": dict(sorted(Counter(str(r.get("label", r.get("status"))) for r in records
                                      if r["outcome"] != "failed").items())),
        "alpha": alpha_interval(votes, runs, categories=categories, resamples=resamples, seed=seed),
        "pairs": [{"members": [a, b], **kappa_interval(own[a], own[b], runs, categories=categories,
                                                       resamples=resamples, seed=seed)}
                  for a, b in combinations(members, 2)],
    }


def panel_summary(panel: Panel, items: Mapping[str, Sequence[Mapping[str, Any]]],
                  judgments: Iterable[Mapping[str, Any]], *, runs: Mapping[str, Sequence[Hashable]] | None = None,
                  cells: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                  resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any] | None:
    """The ``judge_panel`` a summary or judging records; None for a single judge (nothing to add).

    ``runs`` (kind -> each item's run) makes the intervals resample runs; without it the items
    of the one run are resampled. ``cells`` (:func:`cell_items`) adds each cell's unanimity."""
    if panel.single:
        return None
    kinds = {kind: kind_agreement(records, panel.names, panel.samples, KINDS[kind], (runs or {}).get(kind),
                                  resamples=resamples, seed=seed)
             for kind, records in items.items() if records}
    return {**panel.describe(), "disputed": {kind: k["outcomes"]["disputed"] for kind, k in kinds.items()},
            "member_failures": failures_by_member(panel.names, judgments), "kinds": kinds,
            **({"cells": {cell: unanimity(records, panel.names, panel.samples) for cell, records in sorted(cells.items())}}
               if cells is not None else {})}
