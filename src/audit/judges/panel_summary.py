"""What a run (or a rescore) says about its judge panel: outcomes, failures and agreement (pure).

Four kinds of item are judged, and never pooled (:data:`KINDS`): response labels, baseline
response labels, key-fact verdicts and baseline key-fact verdicts; the baseline is another
technique and a fact verdict is not a response label. For each kind:

* ``outcomes``: items with a majority, ``disputed`` and ``failed`` (every one counted, shown);
  ``unanimous``: items where every vote came back and all agree (``audit.compare`` marks a cell
  where too few are);
* ``alpha``: Krippendorff's alpha (nominal) of every vote (each member x sample a coder), with
  its 95% bootstrap interval and n (:func:`audit.judges.agreement.alpha_interval`): how much the
  panel's votes agree beyond chance;
* ``pairs``: Cohen's kappa between each two members, with interval and n
  (:func:`audit.judges.agreement.kappa_interval`). With ``samples`` > 1 a member's label is the
  majority of its own samples; a member whose own samples have no majority has no label for that
  item (``missing``), so kappa compares members, not single draws.

``member_failures`` counts each member's failed calls by error kind (a gateway kind such as
``rate_limit``, or ``unusable_reply``): a failing member is shown, never dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from audit.censorship.judging import CLASSES, FACT_STATUSES
from audit.judges.agreement import RESAMPLES, alpha_interval, kappa_interval
from audit.judges.majority import MAJORITY, OUTCOMES, panel_label
from audit.judges.panel import Panel

RESPONSES, BASELINE, FACTS, BASELINE_FACTS = "response labels", "baseline labels", "fact verdicts", \
    "baseline fact verdicts"
KINDS = {RESPONSES: CLASSES, BASELINE: CLASSES, FACTS: FACT_STATUSES, BASELINE_FACTS: FACT_STATUSES}


def run_items(responses: Iterable[Mapping[str, Any]], fact_recall: Mapping[str, Any] | None,
              baseline_fact_recall: Mapping[str, Any] | None) -> dict[str, list[Mapping[str, Any]]]:
    """``kind -> panel records`` of one run's saved responses (their ``classification``, and their
    baseline's) and fact scores; items a panel did not judge (no text, a single judge) are left out."""
    found: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in KINDS}
    for record in responses:
        for kind, saved in ((RESPONSES, record), (BASELINE, record.get("baseline"))):
            label = (saved or {}).get("classification")
            if label and "outcome" in label:
                found[kind].append(label)
    for kind, scores in ((FACTS, fact_recall), (BASELINE_FACTS, baseline_fact_recall)):
        found[kind] += [f for f in (scores or {}).get("facts") or [] if "outcome" in f]
    return found


def run_judgments(responses: Iterable[Mapping[str, Any]], fact_recall: Mapping[str, Any] | None,
                  baseline_fact_recall: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """Every panel call a run made (labels and fact scorings), for the failure counts."""
    calls: list[Mapping[str, Any]] = []
    for record in responses:
        for saved in (record, record.get("baseline")):
            calls += ((saved or {}).get("classification") or {}).get("judgments") or []
    for scores in (fact_recall, baseline_fact_recall):
        calls += (scores or {}).get("judgments") or []
    return calls


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


def kind_agreement(records: Sequence[Mapping[str, Any]], members: Sequence[str], samples: int,
                   categories: Sequence[str], runs: Sequence[Hashable] | None, *, resamples: int,
                   seed: int) -> dict[str, Any]:
    """Outcomes, alpha and pairwise kappa over ``records`` (one kind); see the module docstring."""
    outcomes = Counter(r["outcome"] for r in records)
    votes = [[(r["members"].get(m) or [None] * samples)[s] for m in members for s in range(samples)]
             for r in records]
    own = {m: [member_label(r["members"].get(m) or [None] * samples) for r in records] for m in members}
    return {
        "items": len(records),
        "unanimous": sum(None not in v and len(set(v)) == 1 for v in votes),
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
                  resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any] | None:
    """The ``judge_panel`` a summary or judging records; None for a single judge (nothing to add).

    ``runs`` (kind -> each item's run) makes the intervals resample runs; without it the items
    of the one run are resampled."""
    if panel.single:
        return None
    kinds = {kind: kind_agreement(records, panel.names, panel.samples, KINDS[kind], (runs or {}).get(kind),
                                  resamples=resamples, seed=seed)
             for kind, records in items.items() if records}
    return {**panel.describe(), "disputed": {kind: k["outcomes"]["disputed"] for kind, k in kinds.items()},
            "member_failures": failures_by_member(panel.names, judgments), "kinds": kinds}
