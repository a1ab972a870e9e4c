"""Which judging a comparison shows, and how two judgings of the same runs differ.

A run's *original* judging is the one its audit made (``summary.json`` and the labels in
``audited_responses/``); ``python -m audit.rescore`` adds others beside it, in
``<run dir>/judgings/<name>/judging.json``. ``judging=<name>`` shows one of them instead of the
original: every count, share and recall of the comparison then comes from that judging (the run's
summary with its judge fields replaced, so :mod:`audit.judging.counting` applies unchanged,
``disputed`` included). A run without that judging is listed among the failed runs with the
command that makes it, never counted with its original labels.

``judging=<a>,<b>`` shows ``<a>`` and, beside it, how ``<b>`` labels the same items: per
comparison cell both refusal shares, both fact recalls, the share of items they label differently
and Cohen's kappa with its interval and n (:func:`audit.judging.agreement.kappa_interval`; over runs
when the cell has several). The cell is marked where they disagree beyond
:data:`audit.judging.counting.JUDGES_MARK`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from audit.judging.judge import BASELINE, FACT_STATUSES, KINDS, RESPONSES
from audit.compare.collect import CENSORSHIP, Collected, Failure
from audit.judging.counting import LABELS, check_labels, judgings_mark
from audit.judging.agreement import RESAMPLES, kappa_interval
from audit.judging.majority import DISPUTED
from audit.errors import UserError
from audit.io import walk
from audit.io.atomic import read_json_saved
from audit.record.draws import AUTO, AUTO_PREFIX, BASELINE_SUFFIX
from audit.runs.loading import RunFiles
from audit.record.summary import CensorshipSummary
from audit.judging.labels import lead

ORIGINAL = "original"
JUDGINGS, JUDGING = "judgings", "judging.json"
Labels = dict[str, dict[str, str | None]]
"""kind -> item key (``<iteration>`` or ``fact <n>``) -> label (None: not labelled)."""


def available(runs: Sequence[RunFiles]) -> list[str]:
    """``original`` and every judging name found beside the audit runs, sorted."""
    found = {name for r in runs if r.experiment == CENSORSHIP
             for name in walk.names(r.path / JUDGINGS) if (r.path / JUDGINGS / name / JUDGING).is_file()}
    return [ORIGINAL, *sorted(found)]


def chosen(spec: str | None, runs: Sequence[RunFiles]) -> list[str]:
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


def read_judging(path: Path, name: str) -> dict[str, Any] | None:
    """A run's ``judging.json`` of ``name``; None when the run has none (or it is unreadable)."""
    try:
        data = read_json_saved(path / JUDGINGS / name / JUDGING)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def judged_summary(summary: CensorshipSummary, judging: Mapping[str, Any]) -> CensorshipSummary:
    """``summary`` with its judge fields from ``judging`` (labels, fact scores, failures, panel)."""
    return summary.model_copy(update={
        "classifications": judging.get("classifications") or {},
        "draw_classifications": judging.get("draw_classifications") if summary.draw_classifications is not None
        else None,
        "baseline_classifications": judging.get("baseline_classifications")
        if summary.baseline_classifications is not None else None,
        "fact_recall": judging.get("fact_recall"), "baseline_fact_recall": judging.get("baseline_fact_recall"),
        "judge_failures": judging.get("judge_failures") or [], "judge_panel": judging.get("judge_panel"),
        # the cells' judge key names this judging's judge, not the audit's
        "config": {**(summary.config or {}), "judge": judging.get("judge")}})


def with_judging(collected: Collected, name: str) -> Collected:
    """``collected`` with every audit run shown under judging ``name`` (original: unchanged); a run
    without it joins the failed runs, saying how to make it."""
    if name == ORIGINAL:
        return collected
    runs, failures = [], list(collected.failures)
    for run in collected.runs:
        judging = read_judging(run.path, name) if run.kind == CENSORSHIP else None
        if run.kind != CENSORSHIP:
            runs.append(run)
        elif judging is None:
            failures.append(Failure(run.path, run.label, run.kind, "not judged",
                                    f"no judging {name!r}: python -m audit.rescore {run.path} judging={name} judge..."))
        else:
            assert isinstance(run.summary, CensorshipSummary)
            runs.append(replace(run, summary=judged_summary(run.summary, judging),
                                source=f"{JUDGINGS}/{name}/{JUDGING}"))
    return Collected(runs=runs, failures=failures, loaded=collected.loaded)


def _facts(scores: Mapping[str, Any] | None) -> dict[str, str | None]:
    facts = (scores or {}).get("facts") or []
    return {f"fact {k}": (f.get("status") if f.get("outcome") != "failed" else None) for k, f in enumerate(facts, 1)}


def original_labels(files: RunFiles) -> Labels:
    """The labels of a run's original judging, by item."""
    summary = files.audit
    labels: Labels = {kind: {} for kind in KINDS}
    for draw in files.draws:
        if draw.classification is not None:
            key = draw.id if draw.auto else str(draw.iteration)
            labels["baseline labels" if draw.is_baseline else "response labels"][str(key)] = draw.classification.label
    labels["fact verdicts"] = _facts(summary.fact_recall if summary else None)
    labels["baseline fact verdicts"] = _facts(summary.baseline_fact_recall if summary else None)
    return labels


def judging_labels(judging: Mapping[str, Any]) -> Labels:
    """The labels of a rescore's ``judging.json``, by item."""
    labels: Labels = {kind: {} for kind in KINDS}
    for row in judging.get("responses") or []:
        for kind, side in (("response labels", "response"), ("baseline labels", "baseline")):
            if row.get(f"{side}_label") is not None or row.get(f"original_{side}_label") is not None:
                labels[kind][str(row.get("draw") or row["iteration"])] = row.get(f"{side}_label")
    labels["fact verdicts"] = _facts(judging.get("fact_recall"))
    labels["baseline fact verdicts"] = _facts(judging.get("baseline_fact_recall"))
    return labels


def labels_of(files: RunFiles, name: str) -> Labels | None:
    """A run's labels under judging ``name``; None when the run has no such judging. A response label
    outside the vocabulary is refused, as every count refuses it (:func:`audit.judging.counting.check_labels`)."""
    if name == ORIGINAL:
        labels, source = original_labels(files), files.path / "audited_responses"
    else:
        judging = read_judging(files.path, name)
        if judging is None:
            return None
        labels, source = judging_labels(judging), files.path / JUDGINGS / name / JUDGING
    for kind in (RESPONSES, BASELINE):
        check_labels(labels[kind].values(), source, files.path)
    return labels


def paired(a: Labels, b: Labels) -> dict[str, tuple[list[str | None], list[str | None]]]:
    """Per kind, the two judgings' labels of the items either judged, in one order."""
    out = {}
    for kind in KINDS:
        keys = sorted(set(a[kind]) | set(b[kind]), key=lambda key: (len(key), key))
        if keys:
            out[kind] = ([a[kind].get(key) for key in keys], [b[kind].get(key) for key in keys])
    return out


def differing(pair: tuple[Sequence[str | None], Sequence[str | None]]) -> tuple[int, int]:
    """``(items both judgings labelled, of which labelled differently)``."""
    both = [(x, y) for x, y in zip(*pair) if x is not None and y is not None]
    return len(both), sum(x != y for x, y in both)


def run_pairs(collected: Collected, names: Sequence[str]) -> dict[str, dict[str, tuple[list, list]]]:
    """For two judgings: run label -> :func:`paired` labels, for each audit run that has both."""
    files = {f.path: f for f in collected.loaded}
    out = {}
    for run in collected.runs:
        if run.kind != CENSORSHIP or run.path not in files:
            continue
        a, b = (labels_of(files[run.path], n) for n in names)
        if a is not None and b is not None:
            out[run.label] = {**paired(a, b), **auto_cells(a, b, files[run.path])}
    return out


def auto_cells(a: Labels, b: Labels, files: RunFiles) -> dict[str, tuple[list[str | None], list[str | None]]]:
    """An auto run's response labels under two judgings, per cell (``auto/<technique>`` of its draws,
    by their ids): the draws' techniques are cells of their own, never pooled into one ``auto`` row."""
    cells = {str(d.id): d.cell for d in files.draws if d.auto}
    out = {}
    for cell in sorted(set(cells.values())):
        keys = sorted((k for k, c in cells.items() if c == cell), key=lambda key: (len(key), key))
        out[cell] = ([a["response labels"].get(k) for k in keys], [b["response labels"].get(k) for k in keys])
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


def side_by_side(audits: pd.DataFrame, pairs: Mapping[str, Mapping[str, tuple[list, list]]],
                 names: Sequence[str], *, resamples: int = RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """One row per comparison cell (audited model, topic, technique, auditor, the target's settings; the
    assistant baseline its own technique; the two judges are the two judgings) with both judgings' counts, their differing share and kappa, and the mark."""
    cells: dict[tuple[str, str, str, str, str], dict[str, list]] = {}
    for row in audits.to_dict("records"):
        if not row.get("counted", True) or row["run"] not in pairs:
            continue
        found = pairs[row["run"]]
        # an auto run's rows are its cells auto/<technique> (their facts are the run's, not any cell's)
        # the baseline's cell is keyed by the settings its requests carried (audit.compare.tables)
        own, base = row.get("settings", ""), row.get("baseline_settings", row.get("settings", ""))
        sources = [(cell, cell, "", own) for cell in found if cell.startswith(AUTO_PREFIX)] if row["technique"] == AUTO \
            else [(row["technique"], "response labels", "fact verdicts", own),
                  (f"assistant{BASELINE_SUFFIX}", "baseline labels", "baseline fact verdicts", base)]
        for technique, labels_kind, facts_kind, settings in sources:
            if labels_kind not in found:
                continue
            cell = cells.setdefault((row["audited"], row["topic"], technique, row["auditor"], settings),
                                    {"a": [], "b": [], "runs": [], "fa": [], "fb": [], "fruns": []})
            a, b = found[labels_kind]
            cell["a"] += a
            cell["b"] += b
            cell["runs"] += [row["run"]] * len(a)
            fa, fb = found.get(facts_kind, ([], []))
            cell["fa"] += fa
            cell["fb"] += fb
            cell["fruns"] += [row["run"]] * len(fa)
    out = []
    for (audited, topic, technique, auditor, settings), c in sorted(cells.items()):
        la = [v for v in c["a"] if v is not None]
        lb = [v for v in c["b"] if v is not None]
        n_both, diff = differing((c["a"], c["b"]))
        f_both, f_diff = differing((c["fa"], c["fb"]))
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
