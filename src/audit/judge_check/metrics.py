"""How well a judging matches the researcher's labels (pure: no I/O).

Every response the researcher labelled is counted once. A response the judge failed on (the
call or its reply failed) has no judge label: it leaves every denominator below and is counted
in ``failed``, never silently dropped and never scored as a disagreement.

* Precision of label L: of the responses the judge called L, the share the researcher called L.
* Recall of label L: of the responses the researcher called L (and the judge labelled), the
  share the judge called L.
* Both with a 95% interval from :func:`audit.stats.cluster_rate`: Wilson over the responses when
  they come from one run (or the CSV gives no ``run``), over runs when they come from several.
* The confusion matrix (rows: researcher, columns: judge) and Cohen's kappa with its bootstrap
  interval (:mod:`audit.judging.agreement`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from audit.judging.agreement import RESAMPLES, confusion, kappa_interval
from audit.stats.intervals import cluster_rate


def _rate(hits: Sequence[bool], runs: Sequence[Hashable]) -> dict[str, Any] | None:
    """``sum(hits)/len(hits)`` with its interval, the runs kept apart (None when nothing counted)."""
    ks: dict[Hashable, int] = {}
    ns: dict[Hashable, int] = {}
    for hit, run in zip(hits, runs):
        ks[run] = ks.get(run, 0) + int(hit)
        ns[run] = ns.get(run, 0) + 1
    return cluster_rate([ks[r] for r in ns], [ns[r] for r in ns])


def validate(human: Sequence[str], judged: Sequence[str | None], runs: Sequence[Hashable | None],
             categories: Sequence[str], *, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The whole comparison of ``judged`` (None: the judge failed) against ``human``, item by item."""
    if not len(human) == len(judged) == len(runs):
        raise ValueError("one human label, one judge label and one run per response")
    ok = [i for i, j in enumerate(judged) if j is not None]
    run_of = [runs[i] if runs[i] is not None else "" for i in range(len(runs))]
    per_label = {}
    for label in categories:
        said = [i for i in ok if judged[i] == label]
        meant = [i for i in ok if human[i] == label]
        per_label[label] = {
            "precision": _rate([human[i] == label for i in said], [run_of[i] for i in said]),
            "recall": _rate([judged[i] == label for i in meant], [run_of[i] for i in meant]),
            "human": sum(h == label for h in human), "judge": len(said),
        }
    several_runs = len({run_of[i] for i in ok}) > 1
    return {
        "responses": len(human), "judged": len(ok), "failed": len(human) - len(ok),
        "runs": len(set(run_of)),
        "accuracy": _rate([human[i] == judged[i] for i in ok], [run_of[i] for i in ok]),
        "per_label": per_label,
        "confusion": confusion(human, judged, categories),
        "kappa": kappa_interval(human, judged, run_of if several_runs else None, categories=categories,
                                resamples=resamples, seed=seed),
    }
