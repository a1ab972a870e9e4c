"""Agreement between a run's original judging and a rescore (pure: no I/O).

The items are paired by what was judged: each response's label, each baseline response's label,
each key fact's verdict (from the technique's responses, and from the baseline's). These four
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

Pairs = dict[str, tuple[list[str | None], list[str | None]]]


def _verdicts(scores: Mapping[str, Any] | None, total: int) -> list[str | None]:
    facts = (scores or {}).get("facts") or []
    return [f.get("status") for f in facts] if len(facts) == total else [None] * total


def pairs(original: Mapping[str, Any], judging: Mapping[str, Any]) -> Pairs:
    """``kind -> (original labels, rescored labels)`` for one run; ``original`` is its summary
    (as a dict), ``judging`` the rescore's ``judging.json``. Kinds with no item are left out."""
    found: Pairs = {}
    for side, kind in (("response", "response labels"), ("baseline", "baseline labels")):
        rows = [r for r in judging["responses"] if r[f"{side}_label"] is not None or r[f"original_{side}_label"]]
        if rows:
            found[kind] = ([r[f"original_{side}_label"] for r in rows], [r[f"{side}_label"] for r in rows])
    for key, kind in (("fact_recall", "fact verdicts"), ("baseline_fact_recall", "baseline fact verdicts")):
        total = int(((judging.get(key) or original.get(key) or {}).get("total")) or 0)
        if total and (judging.get(key) or original.get(key)):
            found[kind] = (_verdicts(original.get(key), total), _verdicts(judging.get(key), total))
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
