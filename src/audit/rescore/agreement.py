"""Agreement between a run's original judging and a rescore (pure: no I/O).

The items are paired by what was judged, read from the draws' judgments by judging name (the same
pairing compare's ``judging=a,b`` uses): each response's label, each baseline response's label, each
key fact's verdict (from the technique's responses, and from the baseline's). These four
kinds are never pooled (the baseline is another technique; a fact verdict is not a response
label). Kappa, its interval and the confusion come from :mod:`audit.judging.agreement`: over one
run the bootstrap resamples responses; over several, runs (each run's items together). A
judgment that failed on either side is left out of kappa and counted as ``missing``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from audit.judging.judge import KINDS
from audit.judging.agreement import confusion, kappa_interval
from audit.record.draws import Draw
from audit.record.judgings import Pair, RunJudging, label_pair, verdict_pair

Pairs = dict[str, Pair]


def pairs(draws: Sequence[Draw], judgings: Mapping[str, RunJudging], names: Sequence[str]) -> Pairs:
    """``kind -> (labels of names[0], labels of names[1])`` for one run's ``draws`` (each with its
    judgments by name: :func:`audit.record.judgings.judged_draws`) and its ``judgings``; the draws
    either judged, in the order drawn. Kinds with no item are left out."""
    found: Pairs = {}
    for kind, baseline in (("response labels", False), ("baseline labels", True)):
        labels = label_pair([d for d in draws if d.is_baseline == baseline], names)
        if labels[0]:
            found[kind] = labels
    for kind, baseline in (("fact verdicts", False), ("baseline fact verdicts", True)):
        verdicts = verdict_pair(judgings, names, baseline)
        if verdicts[0]:
            found[kind] = verdicts
    return found


def agreement_rows(scope: str, labelled: Sequence[tuple[Hashable, Pairs]], *, resamples: int, seed: int
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """For the runs in ``labelled`` (run name, its pairs): one row per kind with kappa, its 95%
    interval, n, missing items and the interval's unit; and the confusion, one row per cell."""
    rows, cells = [], []
    for kind, categories in KINDS.items():
        a: list[str | None] = []
        b: list[str | None] = []
        runs: list[Hashable] = []
        for run, found in labelled:
            if kind in found:
                a += found[kind][0]
                b += found[kind][1]
                runs += [run] * len(found[kind][0])
        if not a:
            continue
        k = kappa_interval(a, b, runs, categories=categories, resamples=resamples, seed=seed)
        agreed = sum(x == y and x is not None for x, y in zip(a, b))
        rows.append({"scope": scope, "kind": kind, "kappa": k["value"], "lo": k["lo"], "hi": k["hi"], "n": k["n"],
                     "missing": k["missing"], "agreed": agreed, "runs": len(set(runs)), "unit": k["unit"],
                     "method": k["method"], "note": k.get("note", "")})
        table = confusion(a, b, categories)
        for i, original in enumerate(table["categories"]):
            for j, rescored in enumerate(table["categories"]):
                cells.append({"scope": scope, "kind": kind, "original": original, "rescore": rescored,
                              "count": table["matrix"][i][j]})
    return rows, cells


def agreement_line(row: Mapping[str, Any]) -> str:
    """One printed line: ``response labels: kappa 0.50 [0.10, 0.90] (n=8, 6 agreed, 0 missing; responses)``."""
    value = "undefined" if row["kappa"] != row["kappa"] else f"{row['kappa']:.2f}"
    interval = (f" [{row['lo']:.2f}, {row['hi']:.2f}]" if row["lo"] is not None
                else f" [no interval: {row['note'] or 'too few items, or kappa undefined'}]")
    return (f"  {row['kind']}: kappa {value}{interval} (n={row['n']}, {row['agreed']} agreed, "
            f"{row['missing']} missing; 95% interval over {row['unit']})")
