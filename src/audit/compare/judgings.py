"""Which judging a comparison shows, and how two judgings of the same runs differ.

A run's *original* judging is the one its audit made (``summary.json`` and the labels in
``audited_responses/``); ``python -m audit.rescore`` adds others beside it, in
``<run dir>/judgings/<name>/judging.json``. Every draw carries its label under each judging's name
(:func:`audit.record.judgings.judged_draws`), so ``judging=<name>`` only picks a name: every count,
share and recall of the comparison is then grouped from that judging's labels of the draws and its
fact scores (:mod:`audit.compare.draw_rows`), ``disputed`` included. A run without that judging is
listed among the failed runs with the command that makes it, never counted with its original labels.

``judging=<a>,<b>`` shows ``<a>`` and, beside it, how ``<b>`` labels the same draws: per comparison
cell both refusal shares, both fact recalls, the share of items they label differently and Cohen's
kappa with its interval and n (:func:`audit.judging.agreement.kappa_interval`; over runs when the
cell has several). The cell is marked where they disagree beyond
:data:`audit.judging.counting.JUDGES_MARK`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from audit.compare.collect import CENSORSHIP, Run
from audit.errors import UserError
from audit.judging.agreement import RESAMPLES, differing, kappa_interval
from audit.judging.counting import LABELS, check_labels, judgings_mark
from audit.judging.judge import FACT_STATUSES
from audit.judging.majority import DISPUTED
from audit.record.draws import AUTO_PREFIX, BASELINE_SUFFIX, ORIGINAL
from audit.record.judgings import Pair, label_pair, verdict_pair
from audit.judging.labels import lead

def available(runs: Sequence[Run]) -> list[str]:
    """``original`` and every other judging name found on the audit runs, sorted."""
    found = {name for r in runs if r.kind == CENSORSHIP for name in r.judgings if name != ORIGINAL}
    return [ORIGINAL, *sorted(found)]


def chosen(spec: str | None, runs: Sequence[Run]) -> list[str]:
    """The judgings ``judging=`` names (one, or two comma-separated), checked against what exists;
    an unknown name is one line listing the available ones."""
    if spec is None or not str(spec).strip():
        return [ORIGINAL]
    names = [n.strip() for n in str(spec).split(",")]
    names_ok = available(runs)
    if len(names) > 2 or len(set(names)) != len(names) or "" in names:
        raise UserError(f"judging={spec}: give one judging or two different ones, e.g. judging={names_ok[-1]} or "
                        f"judging={ORIGINAL},{names_ok[-1]}")
    for name in names:
        if name not in names_ok:
            raise UserError(f"judging={name}: no such judging under these runs; available: {', '.join(names_ok)} "
                            "(python -m audit.rescore <dirs> judge... makes one)")
    return names


def not_judged(run: Run, name: str) -> str:
    """The failed-runs row's problem for a run without judging ``name``: the command that makes it."""
    return f"no judging {name!r}: python -m audit.rescore {run.path} judging={name} judge..."


def run_items(run: Run, names: Sequence[str]) -> dict[str, tuple[Pair, Pair]]:
    """Per comparison cell of one run: both judgings' labels of its draws, and their fact verdicts (an
    auto run's cells ``auto/<technique>`` have none of their own: the run's cover all its draws). A
    label outside the vocabulary is refused, naming the file it came from."""
    for name in names:
        source = run.path / (run.judgings[name].source if name != ORIGINAL else "audited_responses")
        check_labels((d.judgings[name].label for d in run.draws if name in d.judgings), source, run.path)
    out: dict[str, tuple[Pair, Pair]] = {}
    for cell in sorted({d.cell for d in run.draws}):
        draws = [d for d in run.draws if d.cell == cell]
        labels = label_pair(draws, names)
        if not labels[0]:
            continue
        facts = ([], []) if cell.startswith(AUTO_PREFIX) else verdict_pair(run.judgings, names, draws[0].is_baseline)
        out[cell] = labels, facts
    return out


LEAD = lead().name
"""The headline share both judgings are shown side by side on (``judging/labels.yaml``)."""
SIDE_COLUMNS = ("audited", "topic", "technique", "auditor", "settings", "runs", "judging_a", "judging_b", "n_labelled_a", "n_labelled_b",
                f"{LEAD}_share_a", f"{LEAD}_share_b", "disputed_a", "disputed_b", "unlabelled_a", "unlabelled_b",
                "n_both", "differing", "differing_share", "kappa", "kappa_lo", "kappa_hi", "kappa_unit",
                "facts_n_both", "facts_differing", "facts_differing_share", "fact_recall_a", "fact_recall_b",
                "facts_kappa", "facts_kappa_lo", "facts_kappa_hi", "marked", "mark")


def _share(k: int, n: int) -> float:
    return k / n if n else math.nan


def _count(labels: Sequence[str | None], label: str) -> int:
    return sum(v == label for v in labels)


def side_by_side(audits: pd.DataFrame, runs: Sequence[Run], names: Sequence[str], *, resamples: int = RESAMPLES,
                 seed: int = 0) -> pd.DataFrame:
    """One row per comparison cell (audited model, topic, technique, auditor, the target's settings; the
    assistant baseline its own technique; the two judges are the two judgings) with both judgings'
    counts, their differing share and kappa, and the mark: grouped from the draws of the counted
    ``audits`` rows' runs that have both judgings."""
    by_label = {r.label: r for r in runs if r.kind == CENSORSHIP and all(n in r.judgings for n in names)}
    cells: dict[tuple[str, str, str, str, str], dict[str, list]] = {}
    for row in audits.to_dict("records"):
        if not row.get("counted", True) or row["run"] not in by_label:
            continue
        # the baseline's cell is keyed by the settings its requests carried (audit.compare.tables)
        own, base = row.get("settings", ""), row.get("baseline_settings", row.get("settings", ""))
        for technique, ((a, b), (fa, fb)) in run_items(by_label[row["run"]], names).items():
            settings = base if technique.endswith(BASELINE_SUFFIX) else own
            cell = cells.setdefault((row["audited"], row["topic"], technique, row["auditor"], settings),
                                    {"a": [], "b": [], "runs": [], "fa": [], "fb": [], "fruns": []})
            cell["a"] += a
            cell["b"] += b
            cell["runs"] += [row["run"]] * len(a)
            cell["fa"] += fa
            cell["fb"] += fb
            cell["fruns"] += [row["run"]] * len(fa)
    out = []
    for (audited, topic, technique, auditor, settings), c in sorted(cells.items()):
        la = [v for v in c["a"] if v is not None]
        lb = [v for v in c["b"] if v is not None]
        n_both, diff = differing(c["a"], c["b"])
        f_both, f_diff = differing(c["fa"], c["fb"])
        kappa = kappa_interval(c["a"], c["b"], c["runs"], categories=LABELS, resamples=resamples, seed=seed)
        facts = kappa_interval(c["fa"], c["fb"], c["fruns"], categories=FACT_STATUSES, resamples=resamples,
                               seed=seed) if c["fa"] else {"value": math.nan, "lo": None, "hi": None}
        mark = judgings_mark(_share(diff, n_both), _share(f_diff, f_both))
        out.append({"audited": audited, "topic": topic, "technique": technique, "auditor": auditor,
                    "settings": settings, "runs": len(set(c["runs"])),
                    "judging_a": names[0], "judging_b": names[1], "n_labelled_a": len(la), "n_labelled_b": len(lb),
                    f"{LEAD}_share_a": _share(_count(la, LEAD), len(la)),
                    f"{LEAD}_share_b": _share(_count(lb, LEAD), len(lb)),
                    "disputed_a": _count(la, DISPUTED), "disputed_b": _count(lb, DISPUTED),
                    "unlabelled_a": len(c["a"]) - len(la), "unlabelled_b": len(c["b"]) - len(lb),
                    "n_both": n_both, "differing": diff, "differing_share": _share(diff, n_both),
                    "kappa": kappa["value"], "kappa_lo": kappa["lo"], "kappa_hi": kappa["hi"],
                    "kappa_unit": kappa.get("unit", ""),
                    "facts_n_both": f_both, "facts_differing": f_diff, "facts_differing_share": _share(f_diff, f_both),
                    "fact_recall_a": _recall(c["fa"]), "fact_recall_b": _recall(c["fb"]),
                    "facts_kappa": facts["value"], "facts_kappa_lo": facts["lo"], "facts_kappa_hi": facts["hi"],
                    "marked": bool(mark), "mark": mark})
    return pd.DataFrame(out, columns=list(SIDE_COLUMNS))


def _recall(verdicts: Sequence[str | None]) -> float:
    """Revealed facts over the facts with a verdict (a failed one is out of the denominator)."""
    settled = [v for v in verdicts if v is not None]
    return _share(_count(settled, "revealed"), len(settled))
