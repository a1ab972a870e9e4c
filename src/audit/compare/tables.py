"""The comparison tables (pandas), built from the runs :mod:`audit.compare.collect` read.

Pure: no file access but the per-answer table of epistemic runs (read through
:func:`audit.compare.collect.epistemic_answers`, for the matrix's card-clustered intervals). A run whose summary lacks what a table needs is not dropped but
turned into a row of the failed-runs table that says what is missing.

How a run's summary becomes counts (labelled and unlabelled responses, fact statuses, recall
n/a) is :mod:`audit.judging.counting`. Shares of responses are over the responses the judge
labelled; unlabelled ones are counted in their own column; a run without a judge has no shares
(NaN, shown as "—"). Every aggregate is per technique (the assistant baseline sampled alongside
a technique is its own technique), and the run is the unit: a cell's share pools the counts of
its runs (sum of revealed facts / sum of facts, not a mean of ratios) and its interval is over
runs (:mod:`audit.stats.intervals`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from audit.censorship.auditor_context import auditor_label
from audit.compare.answer_settings import OWN_PARAMETERS, UNKNOWN as UNKNOWN_SETTING, answer_settings, label, settings_labels, \
    target_settings, unrouted, varied_settings
from audit.compare.card_answers import answer_parts, cell_answers, cell_rate
from audit.compare.collect import CENSORSHIP, EPISTEMIC, Collected, epistemic_answers, Failure, Run, natural_key
from audit.compare.judgings import available, not_judged, side_by_side
from audit.compare.fact_rows import FACT_COUNTS, fact_rows, frame as fact_frame, run_scores, scored
from audit.compare.draw_rows import NOT_JUDGED, cell_counts, cell_panels, draw_rows, frame as draw_frame, judged, \
    label_column, label_counts, panel_counts, with_cell_keys
from audit.judging.counting import JUDGES_MARK, LABELS, UNLABELLED, UNLABELLED_MARK, CountError, FactScore, \
    blocked_n, cell_blocked, check_labels, count, fact_score, judgings_mark, response_counts, panel_split, \
    run_flags
from audit.epistemic.rates import COMPARED_RATES
from audit.io.frames import records_frame
from audit.judging.majority import DISPUTED
from audit.judging.panel import judge_label
from audit.judging.judge import BASELINE, RESPONSES
from audit.record.answers import SystemMetrics
from audit.record.draws import AUTO, AUTO_PREFIX, BASELINE_SUFFIX, ORIGINAL
from audit.record.summary import CensorshipSummary, EpistemicSummary, pin_text, served_text
from audit.judging.labels import headlines, lead
from audit.record.usage import Usage
from audit.stats.intervals import cluster_rate, paired_difference, unpaired_difference

# The epistemic rates a comparison shows, each with its 95% interval (metrics.json order).
EPISTEMIC_METRICS = COMPARED_RATES
HEADLINE = tuple(label.name for label in headlines())
"""The labels whose shares are headline columns (``headline:`` in ``judging/labels.yaml``), in its order."""
LEAD = lead().name
"""The headline share that leads (:func:`audit.judging.labels.lead`): the map's spread, the language gap."""
SHARES = tuple(f"{c}_share" for c in LABELS)  # the classes and a panel's "disputed"
CELL = ("audited", "topic", "technique", "auditor", "judge", "settings")
"""What a comparison cell is: runs of one audited model, topic and technique, probed by one auditor,
labelled by one judge and sent to the target with the same settings (model id, template, provider pin,
endpoint, sampling: :func:`audit.compare.answer_settings.target_settings`, labelled by those that vary
among one audited model's runs). None is ever pooled; a page shows the auditor, judge and settings
only where the runs compared vary them."""
AUDIT_COLUMNS = ("run", "audited", "audited_model", "topic", "technique", "baseline", "auditor", "judge", "settings",
                 "baseline_settings", "provider_pin", "providers", "status",
                 "flags",
                 "repeat", "replay", "counted", "iterations", "n_responses", "n_labelled", UNLABELLED, DISPUTED, "blocked",
                 *SHARES,
                 "panel_items", "panel_split", "baseline_panel_items", "baseline_panel_split",
                 "fact_recall", "facts_revealed", "facts_confirmed", "facts_contradicted", "facts_total", "contradiction_rate",
                 "fact_scoring",
                 "baseline_n_responses", "baseline_unlabelled", "baseline_fact_recall", "baseline_facts_revealed",
                 "baseline_facts_confirmed", "baseline_facts_contradicted", "baseline_facts_total", "baseline_fact_scoring",
                 "citations_verified", "citations_unverified", "audited_errors", "probes_off_language", "failed_calls",
                 "assessment_failed",
                 "tokens", "cost",
                 "started_at", "path")
RESPONSE_COLUMNS = ("run", "audited", "topic", "technique", "auditor", "judge", "settings", "unrouted", "baseline", "n_responses", "n_labelled", UNLABELLED, *LABELS,
                    "blocked", "panel_items", "panel_split")
EPISTEMIC_COLUMNS = ("run", "domain", "predicate", "system", "condition", "suites", "settings", "status", "mapping", "stage", "repeat", "replay", "counted",
                     "card_set", "n_cards", "n_scored", "errors",
                     *(f"{m}{s}" for m in EPISTEMIC_METRICS for s in ("", "_lo", "_hi", "_k", "_n")), "cost", "path")
EPISTEMIC_MATRIX_COLUMNS = ("metric", "system", "domain", "predicate", "condition", "suites", "settings", "mapping", "runs", "repeats", "replays", "k", "n",
                            "cards", "answers", "card_repeats", "rate", "rate_lo", "rate_hi", "method")
FAILED_COLUMNS = ("run", "kind", "status", "problem", "path")
_CI = ("", "_lo", "_hi")
MAP_COLUMNS = (*CELL, "runs", "off_language_runs", "repeats", "replays", "n_responses", "n_labelled", UNLABELLED,
               "unlabelled_share", "unlabelled_marked", DISPUTED, "panel_items", "panel_split", "panel_split_share",
               "judges_marked", "judges_mark", *HEADLINE, "blocked", *(f"blocked_share{s}" for s in _CI),
               "fact_runs", "facts_revealed", "facts_confirmed", "facts_contradicted", "facts_total",
               *(f"{m}{s}" for m in (*(f"{c}_share" for c in HEADLINE), "fact_recall", "contradiction_rate")
                 for s in _CI), "baseline_fact_runs", "baseline_facts_revealed", "baseline_facts_total",
               *(f"baseline_fact_recall{s}" for s in _CI), f"{LEAD}_min", f"{LEAD}_max", "interval_unit", "interval",
               "provider_pin", "providers")
FACT_COLUMNS = ("run", "audited", "topic", "technique", "auditor", "judge", "settings", "fact_no", "fact", "status", "quote")
FACT_MATRIX_COLUMNS = ("topic", "technique", "auditor", "judge", "settings", "fact_no", "fact", "audited", "runs", "revealed",
                       "confirmed", "contradicted")
LANGUAGE_COLUMNS = (*CELL, "runs_en", "runs_zh", "off_language_runs",
                    "unlabelled_en", "unlabelled_zh", f"{LEAD}_share_en", f"{LEAD}_share_zh",
                    *(f"{m}{s}" for m in (f"{LEAD}_gap", "facts_gap") for s in _CI))
GAP_COLUMNS = (*CELL, "runs", "paired_runs", "runs_without_baseline", "assistant_runs",
               "unlabelled_technique", "unlabelled_baseline", "technique_fact_recall", "baseline_fact_recall",
               *(f"{m}{s}" for m in (*(f"{c}_gap" for c in HEADLINE), "facts_gap", "facts_gap_vs_assistant_runs")
                 for s in _CI), "missing")
PROVIDER_GAP_COLUMNS = (*CELL[:-1], "settings_a", "settings_b", "providers_a", "providers_b", "runs_a", "runs_b",
                        "unlabelled_a", "unlabelled_b", f"{LEAD}_share_a", f"{LEAD}_share_b",
                        *(f"{LEAD}_gap{s}" for s in _CI), "fact_recall_a", "fact_recall_b",
                        *(f"facts_gap{s}" for s in _CI), "interval")
BASELINE_CELL = "assistant" + BASELINE_SUFFIX
"""The assistant baseline's cell (:attr:`audit.record.draws.Draw.cell` of a baseline draw)."""
NO_BASELINE = ("no assistant baseline in these runs: the gaps need one; sample it with technique.with_baseline=true")


class Unusable(ValueError):
    """A run the tables cannot use; ``status`` is what the failed-runs table shows."""

    def __init__(self, problem: str, status: str = "unreadable") -> None:
        super().__init__(problem)
        self.status = status


@dataclass
class Tables:
    audits: pd.DataFrame        # one row per censorship run
    responses: pd.DataFrame     # per run and technique (its baseline too): classification counts
    epistemic: pd.DataFrame     # one row per (epistemic run, system)
    failed: pd.DataFrame        # failed runs and unusable files, with the reason
    censorship_map: pd.DataFrame  # per (audited, topic, technique): run-level rates with intervals
    gaps: pd.DataFrame          # knows vs says: per (audited, topic, technique) gaps to the assistant
    languages: pd.DataFrame     # per (audited, topic, technique): Chinese twin minus English
    facts: pd.DataFrame         # per run and key fact: the judge's verdict and quote
    fact_matrix: pd.DataFrame   # per (topic, technique, fact, audited): runs revealing / contradicting it
    epistemic_matrix: pd.DataFrame  # per (metric, system, domain, predicate): rate over runs
    judgings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame())  # judging=a,b: per cell, side by side
    draws: pd.DataFrame = field(default_factory=lambda: draw_frame([], [ORIGINAL]))
    """One row per draw of the audit runs, its label under every judging found (:mod:`audit.compare.draw_rows`)."""
    provider_gaps: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PROVIDER_GAP_COLUMNS))
    """Cells that differ only in who served them, side by side (:func:`provider_gaps`)."""


def _node(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``data[key]`` as a mapping ({} when absent or null)."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Unusable(f"{where}: '{key}' should be an object, found {type(value).__name__}")
    return value


def _number(value: Any, what: str, where: str = "summary.json") -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unusable(f"{where}: {what} should be a number, found {value!r}")
    return float(value)


def ratio(k: float, n: float) -> float:
    """k/n, NaN when nothing was counted (an undefined share is not 0)."""
    return k / n if n else math.nan


def audit_records(run: Run, judging: str = ORIGINAL) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's row of the audits table, its classification counts per technique (its labels of the
    run's draws: :mod:`audit.compare.draw_rows`) and its fact rows (:mod:`audit.compare.fact_rows`),
    under judging ``judging``."""
    s = run.summary
    assert isinstance(s, CensorshipSummary)
    shown = run.judgings[judging]
    config = s.config or {}
    audited, topic, auditor = (_node(config, k, "summary.json config") for k in ("audited", "topic", "auditor"))
    if not audited or not topic:
        raise Unusable("summary.json: config has no audited model or topic")
    technique = str(s.technique or _node(config, "technique", "summary.json config").get("name") or "?")
    classes, base_classes, cells, panels, source = judged_counts(run, judging, technique)
    counts = response_counts(classes, **source)
    has_baseline = s.baseline_classifications is not None
    base_counts = response_counts(base_classes, "baseline_classifications", **source)
    facts = fact_score(shown.fact_recall, counts["n_responses"])
    base_facts = fact_score(shown.baseline_fact_recall, base_counts["n_responses"], "baseline_fact_recall") \
        if has_baseline else None
    evidence, usage = s.evidence, s.usage or Usage()
    # a node without a name (a hand-made or old config) reads "n/a", never the string "None"
    # settings: what the target was sent, a dict here, the label of those that vary once all rows are read
    key = {"run": run.label, "audited": str(audited.get("name") or audited.get("model") or "n/a"),
           "topic": str(topic.get("name") or "n/a"),
           "auditor": auditor_label(auditor), "judge": judge_label(shown.judge),
           "settings": target_settings(config)}
    served = s.served or {}
    row = {
        **key,
        "audited_model": audited.get("model"),
        # the pin asked for, and who served the target's draws (summary.json served; n/a: not recorded)
        "provider_pin": pin_text(audited.get("provider")) if "provider" in audited else UNKNOWN_SETTING,
        "providers": served_text(served["providers"]) if isinstance(served.get("providers"), Mapping)
        else UNKNOWN_SETTING,
        "technique": technique,
        "baseline": s.with_baseline,
        "status": run.status,
        "flags": "; ".join(filter(None, [run_flags(s.failed_calls, counts[UNLABELLED], base_counts[UNLABELLED], facts,
                                                   base_facts, off_language=int((s.probe_language or {}).get("mismatched") or 0),
                                                   assessment_failed=len(s.assessment_failures)),
                                         (s.served or {}).get("flag")])),
        "repeat": s.repeat,
        "replay": usage.replay,
        "counted": True,  # set by count_replays_once
        "iterations": s.total_iterations,
        "n_responses": counts["n_responses"], "n_labelled": counts["n_labelled"], UNLABELLED: counts[UNLABELLED],
        DISPUTED: counts[DISPUTED],
        # draws a filter blocked (never judged, never a failure): the run's own, its baseline's apart
        "blocked": sum(cell_blocked(s.blocked, c) for c in (s.blocked or {}) if not c.endswith(BASELINE_SUFFIX)),
        # a judge panel: responses judged, and those whose votes were not unanimous (the cell's mark)
        **cell_panel(panels, RESPONSES), **cell_panel(panels, BASELINE, "baseline_"),
        **{f"{c}_share": ratio(counts[c], counts["n_labelled"]) for c in LABELS},
        **fact_columns("", facts),
        # The assistant baseline's own responses on the same probes, scored apart: what the model
        # says as the assistant, beside what it says under the technique (knows vs says).
        "baseline_n_responses": base_counts["n_responses"] if has_baseline else math.nan,
        "baseline_unlabelled": base_counts[UNLABELLED] if has_baseline else math.nan,
        **fact_columns("baseline_", base_facts or FactScore(False, "no baseline")),
        "citations_verified": count(evidence.get("verified"), "evidence.verified"),
        "citations_unverified": count(evidence.get("unverified"), "evidence.unverified"),
        "audited_errors": s.audited_errors,
        # probes not in the topic's language (measured; runs before the check have none recorded)
        "probes_off_language": (s.probe_language or {}).get("mismatched", math.nan),
        # Calls that failed after their retries (the run still says success; resume= re-does them).
        "failed_calls": s.failed_calls,
        # judge.assess=true: responses whose honesty and awareness verdicts failed (their label stands)
        "assessment_failed": len(s.assessment_failures),
        "tokens": usage.tokens,
        "cost": usage.cost if s.usage is not None else math.nan,
        "started_at": s.started_at,
        "path": str(run.path),
    }
    # a judge panel per cell: its draws judged, and those whose votes were not unanimous (the cell's mark)
    responses = [{**key, "technique": technique, "baseline": False, **counts,
                  "blocked": cell_blocked(s.blocked, technique),
                  **cell_panel(panels, technique)}]
    if cells is not None:  # technique=auto: one cell per technique of its draws
        responses = [{**key, "technique": cell, "baseline": False,
                      **response_counts(c, f"draw_classifications.{cell.removeprefix(AUTO_PREFIX)}", **source),
                      "blocked": cell_blocked(s.blocked, cell),  # its techniques: every draw's
                      **cell_panel(panels, cell)}
                     for cell, c in cells.items()]
    if has_baseline:
        responses.append({**key, "technique": BASELINE_CELL, "baseline": True, **base_counts,
                          "blocked": cell_blocked(s.blocked, BASELINE_CELL),
                          **cell_panel(panels, BASELINE_CELL)})
    sides = [(technique, False, facts), *([(BASELINE_CELL, True, base_facts)] if base_facts is not None else [])]
    return row, responses, fact_rows(run.label, judging, sides)


Counts = dict[str, int]


Panels = dict[str, tuple[int, int]]
"""``(panel items, split items)`` per comparison cell, and per kind (:data:`RESPONSES`, :data:`BASELINE`)
for the run's whole technique and its baseline."""


def judged_counts(run: Run, judging: str,
                  technique: str) -> tuple[Counts, Counts, dict[str, Counts] | None, Panels, dict[str, Any]]:
    """A run's label counts under ``judging`` (its ``technique``'s responses', its baseline's and, for
    an auto run, per cell of its draws) and its panel's split (:data:`Panels`), grouped from its draw
    rows, and the file they come from (named when a count is refused). A label outside the vocabulary
    is refused here, naming that file. A run whose saved draws carry no judgment of its own (written
    before draws kept it, or with none saved) is counted from its summary's label counts and
    ``judge_panel``."""
    s = run.summary
    assert isinstance(s, CensorshipSummary)
    if judging == ORIGINAL and not judged(run.draws, judging):
        cells = None if s.draw_classifications is None else \
            {AUTO_PREFIX + t: c for t, c in s.draw_classifications.items()}
        named = [technique, BASELINE_CELL, *(cells or {})]
        panels = {RESPONSES: panel_split(s.judge_panel, RESPONSES), BASELINE: panel_split(s.judge_panel, BASELINE),
                  **{c: panel_split(s.judge_panel, BASELINE if c.endswith(BASELINE_SUFFIX) else RESPONSES, c)
                     for c in named}}
        return (s.classifications, s.baseline_classifications or {}, cells, panels,
                {"source": run.path / "summary.json", "run": run.path})
    if not run.draws:
        raise Unusable(f"judging {judging!r}: the run's saved draws (audited_responses/) cannot be read, so its "
                       "labels cannot be counted; restore them, or compare the original judging")
    source = run.path / (run.judgings[judging].source if judging != ORIGINAL else "audited_responses")
    rows = draw_frame(draw_rows(run.label, run.draws, [judging]), [judging])
    check_labels([v for v in rows[label_column(judging)] if v != NOT_JUDGED], source, run.path)  # judged draws only
    baseline = rows["baseline"].astype(bool)
    own = rows[~baseline]
    cells = cell_counts(own[own["auto"].astype(bool)], judging) if s.draw_classifications is not None else None
    panels = {RESPONSES: panel_counts(own, judging), BASELINE: panel_counts(rows[baseline], judging),
              **cell_panels(rows, judging)}
    return (label_counts(own, judging), label_counts(rows[baseline], judging), cells, panels,
            {"source": source, "run": run.path})


def served_counts(run: Run) -> dict[str, int]:
    """Who served a censorship run's target draws, and how many each ({} when not recorded)."""
    served = getattr(run.summary, "served", None) or {}
    providers = served.get("providers")
    return {str(p): int(n) for p, n in providers.items()} if isinstance(providers, Mapping) else {}


def cell_panel(panels: Panels, cell: str, prefix: str = "") -> dict[str, int]:
    """A cell's (or kind's) ``panel_items`` and ``panel_split`` from :func:`judged_counts` (0, 0: no panel item)."""
    return dict(zip((f"{prefix}panel_items", f"{prefix}panel_split"), panels.get(cell, (0, 0))))


def fact_columns(prefix: str, score: FactScore) -> dict[str, Any]:
    """A fact score as audits-table columns; NaN (shown n/a) when the run has no score."""
    if not score.scored:
        return {f"{prefix}fact_recall": math.nan, **{f"{prefix}{c}": math.nan for c in FACT_COUNTS},
                f"{prefix}contradiction_rate": math.nan, f"{prefix}fact_scoring": score.why}
    contradicted = score.contradicted if score.has_contradictions else math.nan
    return {f"{prefix}fact_recall": ratio(score.revealed, score.total), f"{prefix}facts_revealed": score.revealed,
            f"{prefix}facts_confirmed": score.confirmed, f"{prefix}facts_contradicted": contradicted, f"{prefix}facts_total": score.total,
            f"{prefix}contradiction_rate": ratio(contradicted, score.total), f"{prefix}fact_scoring": score.why}


def _rate(value: Any, system: str, name: str) -> dict[str, float]:
    """A metrics.json rate as value/lo/hi (NaN when undefined: ``null``)."""
    where = f"metrics.json {system}.{name}"
    if value is None:
        return {"": math.nan, "_lo": math.nan, "_hi": math.nan, "_k": math.nan, "_n": math.nan}
    if not isinstance(value, Mapping):
        raise Unusable(f"{where} should be {{value, lo, hi, k, n}} or null, found {value!r}")
    return {"": _number(value.get("value"), "value", where), "_lo": _number(value.get("lo"), "lo", where),
            "_hi": _number(value.get("hi"), "hi", where), "_k": _number(value.get("k"), "k", where),
            "_n": _number(value.get("n"), "n", where)}


def epistemic_records(run: Run) -> list[dict[str, Any]]:
    """One row per system the run scored (per system and condition when it asked several)."""
    s = run.summary
    assert isinstance(s, EpistemicSummary)
    if run.metrics is None:
        raise Unusable(f"no metrics.json (stage={s.stage}): nothing was scored", status="unscored")
    # one row per condition (closed_book / in_context / counterfactual): never pooled
    return [_epistemic_row(run, system, condition, m) for system, condition, m in run.metrics.by_condition()]


def _epistemic_row(run: Run, system: str, condition: str, m: SystemMetrics) -> dict[str, Any]:
    """One (run, system, condition) row of the epistemic table."""
    s = run.summary
    assert isinstance(s, EpistemicSummary)
    rates = m.metrics or {}
    row: dict[str, Any] = {
        "run": run.label, "domain": s.domain, "predicate": s.predicate, "system": system,
        "condition": condition,
        # the suites its cards were drawn from: another mix is another population of cards, never pooled
        # (another cards.seed or cards.num_per_type draws more of the same: one cell, docs/numbers.md)
        "suites": ",".join(sorted(m.suites)),
        # what the system was asked and how (prompt, temperature, ...): a dict here, the label of the
        # settings that vary among its runs once all rows are read (with_settings)
        "settings": answer_settings(run.config, system, run.systems),
        "status": run.status, "mapping": m.mapping, "stage": s.stage,
        "repeat": s.repeat, "replay": s.usage is not None and s.usage.replay,
        "counted": True,
        # which cards the run asked: runs of one card set are repeats of the same cards (older runs
        # without a digest: those of one cell with the same card count are taken to be, which can
        # only widen an interval)
        "card_set": str(s.cards_digest or f"{s.cards} cards"),
        "n_cards": m.n_rows, "n_scored": m.n_scored, "errors": m.n_errors,
    }
    for name in EPISTEMIC_METRICS:
        row.update({f"{name}{suffix}": v for suffix, v in _rate(rates.get(name), system, name).items()})
    # What the run's model calls cost (all its systems together: the ledger is per run).
    row["cost"] = s.usage.cost if s.usage is not None else math.nan
    row["path"] = str(run.path)
    return row


def with_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """The epistemic table with each row's ``settings`` (a dict) replaced by the label of those that
    vary among its system's rows (:func:`audit.compare.answer_settings.settings_labels`): a key of
    the cell and of the sample, so runs that asked differently are never pooled."""
    frame = frame.copy()
    frame["settings"] = settings_labels(list(frame["system"]), [s or {} for s in frame["settings"]])
    return frame


def epistemic_matrix(frame: pd.DataFrame, answers: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per headline metric, system and its varied settings, domain, predicate, condition and suite mix: the rate over that
    cell's runs with an interval over cards. Where a card was answered more than once (a repeat, or a
    claim two card sets drew) and ``answers`` (the per-answer table) recount the runs, the interval is
    card-clustered with the repeats nested in their card (:mod:`audit.compare.card_answers`); otherwise
    repeats of one card set are averaged card by card and distinct card sets add their cards
    (:func:`audit.stats.card_rate`)."""
    parts = None if answers is None else answer_parts(answers, frame[frame["counted"].to_numpy(dtype=bool)])
    rows = []
    # another metrics.mapping is another formula for the same rate: never pooled (unrecorded: apart too)
    # a run that names no domain or predicate (a stage=metrics run over a foreign results file) is a cell
    # of its own, never dropped by the grouping (pandas leaves out rows whose key is missing)
    keyed = frame.assign(scored_as=frame["mapping"].fillna(UNKNOWN_SETTING),
                         **{key: frame[key].fillna(UNKNOWN_SETTING) for key in ("domain", "predicate", "condition",
                                                                                 "suites", "settings")})
    for (system, domain, predicate, condition, suites, settings, mapping), every in keyed.groupby(
            ["system", "domain", "predicate", "condition", "suites", "settings", "scored_as"], sort=True):
        cell = every[every["counted"].to_numpy(dtype=bool)]  # a cached re-run of a sample counts once
        answered = cell_answers(cell, parts, EPISTEMIC_METRICS)
        for metric in EPISTEMIC_METRICS:
            rate = cell_rate(cell, answered, metric)
            rows.append({"metric": metric, "system": system, "domain": domain, "predicate": predicate,
                         "condition": condition, "suites": suites, "settings": settings, "mapping": mapping,
                         "runs": len(cell), "repeats": cell["repeat"].nunique(), "replays": len(every) - len(cell),
                         **{c: math.nan if rate is None else rate[c] for c in ("k", "n", "cards", "answers")},
                         "card_repeats": math.nan if rate is None else rate["repeats"],
                         "method": None if rate is None else rate["method"],
                         **_rate_columns("rate", rate)})
    return pd.DataFrame(rows, columns=EPISTEMIC_MATRIX_COLUMNS)


def _rate_columns(prefix: str, rate: Mapping[str, Any] | None) -> dict[str, Any]:
    """``prefix``, ``prefix_lo``, ``prefix_hi`` (NaN when undefined) from a :mod:`audit.stats.intervals` rate."""
    if rate is None:
        return {prefix: math.nan, f"{prefix}_lo": math.nan, f"{prefix}_hi": math.nan}
    return {prefix: rate["value"], f"{prefix}_lo": rate["lo"], f"{prefix}_hi": rate["hi"]}


AUDIT_SAMPLE = ["audited", "audited_model", "topic", "technique", "baseline", "auditor", "judge", "settings", "repeat"]
EPISTEMIC_SAMPLE = ["system", "settings", "domain", "predicate", "condition", "mapping", "repeat", "card_set"]
"""What makes two runs the same sample: the same cell (the system's settings too: a run under another
prompt is no re-run), repeat index (``samples=k``) and cards (a run over another card set, such as another
``cards.seed``, drew other cards: a cached re-run of it is not a re-run of the first)."""


def count_replays_once(frame: pd.DataFrame, sample: Sequence[str]) -> pd.DataFrame:
    """Mark which rows count as observations (``counted``).

    A re-run of the same sweep is served from the response cache: its run dir repeats a sample
    an earlier run took, so counting it would double n and narrow every interval. Among the rows
    of one sample (same cell and repeat index; each repeat of ``samples=k`` is a fresh sample), a
    replay is not counted when a row that sent its own requests is there; replays alone count once.
    """
    frame = frame.copy()
    counted = pd.Series(True, index=frame.index)
    for _, group in frame.groupby(list(sample), sort=False, dropna=False):
        replays = group.index[group["replay"].to_numpy(dtype=bool)]
        counted[replays if len(replays) < len(group) else replays[1:]] = False
    frame["counted"] = counted
    return frame


def cell_providers(runs: Sequence[str], pins: pd.Series, served: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    """A cell's ``provider_pin`` (the pins its runs asked for, one per distinct value; '' for none) and
    ``providers`` (who served its runs' target draws and how many each, summed over its runs; n/a when
    no run recorded it)."""
    counts: Counter[str] = Counter()
    for run in runs:
        counts.update(served.get(run, {}))
    return {"provider_pin": " | ".join(dict.fromkeys(pins.loc[list(runs)])) if len(runs) else "",
            "providers": served_text(counts) if counts else UNKNOWN_SETTING}


def censorship_map(audits: pd.DataFrame, responses: pd.DataFrame, scores: pd.DataFrame,
                   served: Mapping[str, Mapping[str, int]] | None = None) -> pd.DataFrame:
    """Per (audited model, topic, technique), the run as the unit: shares of labelled responses
    with run-level intervals (:func:`audit.stats.cluster_rate`), runs and responses counted,
    unlabelled responses counted apart (and marked past UNLABELLED_MARK), and the spread of the
    per-run refusal share (repeats of a cell). The assistant baseline sampled alongside a
    technique is its own technique, ``assistant (baseline)``: nothing is pooled across techniques.
    A cell's fact recall is grouped from its runs' fact rows (``scores``: :func:`audit.compare.fact_rows.run_scores`),
    over its runs with a score; a technique's row also carries the fact score of the assistant
    baseline sampled in the same runs, and the baseline's row has that score as its own recall."""
    keys = list(CELL)
    if responses.empty:
        return pd.DataFrame(columns=MAP_COLUMNS)
    by_run = audits.set_index("run")
    rows = []
    for cell_key, every in responses.groupby(keys, sort=True):
        technique = cell_key[2]
        group = every[by_run.loc[every["run"], "counted"].to_numpy(dtype=bool)]
        # A run whose probes were not all in its topic's language is not a run of this cell (an
        # English-probed run would make a _zh cell an English one): left out and named, as in the language gap.
        off = by_run.loc[group["run"], "probes_off_language"].fillna(0).to_numpy() > 0
        strays, group = list(group.loc[off, "run"]), group[~off]
        runs = list(group["run"])
        baseline_cell = bool(group["baseline"].all())
        facts = scored(scores, runs, technique)  # none for an auto/<technique> cell: the run's score is over all its draws
        paired = scored(scores, [] if baseline_cell else runs, BASELINE_CELL)
        leading = cluster_rate(group[LEAD], group["n_labelled"])
        recall = cluster_rate(facts["facts_revealed"], facts["facts_total"], items="facts")
        n_responses, unlabelled = int(group["n_responses"].sum()), int(group[UNLABELLED].sum())
        panel_items, split = int(group["panel_items"].sum()), int(group["panel_split"].sum())
        row = {**dict(zip(keys, cell_key)), "runs": len(group), "off_language_runs": ", ".join(strays),
               "repeats": by_run.loc[runs, "repeat"].nunique(), "replays": len(every) - len(group),
               "n_responses": n_responses, "n_labelled": int(group["n_labelled"].sum()), UNLABELLED: unlabelled,
               "unlabelled_share": ratio(unlabelled, n_responses),
               "unlabelled_marked": bool(n_responses) and unlabelled / n_responses > UNLABELLED_MARK,
               DISPUTED: int(group[DISPUTED].sum()), "panel_items": panel_items, "panel_split": split,
               "panel_split_share": ratio(split, panel_items),
               "judges_marked": bool(panel_items) and split / panel_items > JUDGES_MARK,
               "judges_mark": judgings_mark(ratio(split, panel_items), math.nan, "the panel's members"),
               **{c: int(group[c].sum()) for c in HEADLINE},
               "blocked": int(group["blocked"].sum()),
               **_rate_columns("blocked_share", cluster_rate(group["blocked"],
                                                             blocked_n(group["n_responses"], group["blocked"]),
                                                             items="draws")),
               "fact_runs": len(facts),
               **{c: facts[c].sum(min_count=1) for c in FACT_COUNTS},
               **{k: v for c in HEADLINE
                  for k, v in _rate_columns(f"{c}_share", cluster_rate(group[c], group["n_labelled"])).items()},
               **_rate_columns("fact_recall", recall),
               **_rate_columns("contradiction_rate", cluster_rate(facts["facts_contradicted"], facts["facts_total"],
                                                                  items="facts")),
               "baseline_fact_runs": len(paired),
               "baseline_facts_revealed": paired["facts_revealed"].sum(min_count=1),
               "baseline_facts_total": paired["facts_total"].sum(min_count=1),
               **_rate_columns("baseline_fact_recall",
                               cluster_rate(paired["facts_revealed"], paired["facts_total"], items="facts")),
               f"{LEAD}_min": math.nan if leading is None else leading["spread"][0],
               f"{LEAD}_max": math.nan if leading is None else leading["spread"][1],
               "interval_unit": "" if leading is None else leading["unit"],
               "interval": "" if leading is None else leading["method"],
               **cell_providers(runs, by_run["provider_pin"], served or {})}
        rows.append(row)
    return pd.DataFrame(rows, columns=MAP_COLUMNS)


def knows_vs_says(audits: pd.DataFrame, responses: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per (audited model, topic, technique other than assistant): what the model says under the
    technique minus what it says as the assistant on the same probes.

    Refusal and official-line shares (of labelled responses), and facts revealed, are paired
    within runs that sampled the assistant baseline alongside the technique (the judge scores the
    baseline's responses apart; :func:`audit.stats.paired_difference`). Beside the facts gap, both
    of its sides: facts revealed under the technique and facts revealed by the assistant baseline,
    over the same paired runs. A second facts gap compares the technique's runs with the
    assistant-technique runs of the same model and topic (separate runs:
    :func:`audit.stats.unpaired_difference`). A technique whose runs sampled no baseline gets a
    row that says so (``missing``) rather than no row. A negative refusal gap means the model
    refuses less when it does not speak as the assistant: it knows more than it says. The facts are
    grouped from the runs' fact rows (``scores``: :func:`audit.compare.fact_rows.run_scores`)."""
    keys = ["audited", "topic", "auditor", "judge", "settings"]
    if responses.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    own = responses[~responses["baseline"]].set_index("run")
    base = responses[responses["baseline"]].set_index("run")
    rows = []
    for (audited, topic, auditor, judge, settings), cell in audits.groupby(keys, sort=True):
        who = {"auditor": auditor, "judge": judge, "settings": settings}
        assistant_runs = cell[cell["technique"] == "assistant"]
        assistant_scored = scored(scores, list(assistant_runs["run"]), "assistant")
        # an auto run has no baseline to pair (its draws' techniques are cells of the map, auto/<technique>)
        fixed = cell[~cell["technique"].isin(["assistant", AUTO])]
        for technique, runs in fixed.groupby("technique", sort=True):
            paired = [r for r in runs["run"] if r in base.index]
            a, b = own.loc[paired], base.loc[paired]
            row: dict[str, Any] = {"audited": audited, "topic": topic, "technique": technique, **who,
                                   "runs": len(runs),
                                   "paired_runs": len(paired), "runs_without_baseline": len(runs) - len(paired),
                                   "assistant_runs": len(assistant_runs),
                                   "unlabelled_technique": int(a[UNLABELLED].sum()),
                                   "unlabelled_baseline": int(b[UNLABELLED].sum()),
                                   "missing": NO_BASELINE if not paired else ""}
            for cls in HEADLINE:
                gap = paired_difference(a[cls], a["n_labelled"], b[cls], b["n_labelled"])
                row.update(_rate_columns(f"{cls}_gap", gap))
            # Facts: only runs where both sides have a score (n/a on either side leaves the pair out).
            said, as_assistant = scored(scores, paired, technique), scored(scores, paired, BASELINE_CELL)
            both = [r for r in said.index if r in as_assistant.index]
            said, as_assistant = said.loc[both], as_assistant.loc[both]
            row["technique_fact_recall"] = ratio(said["facts_revealed"].sum(), said["facts_total"].sum())
            row["baseline_fact_recall"] = ratio(as_assistant["facts_revealed"].sum(), as_assistant["facts_total"].sum())
            row.update(_rate_columns("facts_gap", paired_difference(
                said["facts_revealed"], said["facts_total"], as_assistant["facts_revealed"], as_assistant["facts_total"])))
            technique_scored = scored(scores, list(runs["run"]), technique)
            row.update(_rate_columns("facts_gap_vs_assistant_runs", unpaired_difference(
                technique_scored["facts_revealed"], technique_scored["facts_total"],
                assistant_scored["facts_revealed"], assistant_scored["facts_total"])))
            rows.append(row)
        rows += [{**row, **who} for row in _auto_gaps(audited, topic, cell, own, len(assistant_runs))]
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


NO_AUTO_ASSISTANT = "no assistant draws in these auto runs: the auditor never asked as the assistant"


def _auto_gaps(audited: str, topic: str, cell: pd.DataFrame, own: pd.DataFrame, assistant_runs: int) -> list[dict]:
    """Knows vs says read from ``technique=auto`` runs alone: per technique ``T`` the auditor chose,
    its draws' shares minus those of the same runs' ``assistant`` draws (``auto/T`` against
    ``auto/assistant``), paired within each run (:func:`audit.stats.paired_difference`: the run is
    the unit, each draw counted once). Not the same probes as a baseline's (the auditor chose what to
    ask under which action), so these rows stand apart from the fixed techniques' (never pooled).
    Facts have no per-draw score (the run's covers all its draws): the facts gaps stay n/a."""
    runs = cell.loc[cell["technique"] == AUTO, "run"]
    draws = own[own.index.isin(runs) & own["technique"].str.startswith(AUTO_PREFIX)]
    says = draws[draws["technique"] == AUTO_PREFIX + "assistant"]
    rows = []
    for technique, arm in draws[draws["technique"] != AUTO_PREFIX + "assistant"].groupby("technique", sort=True):
        paired = [r for r in arm.index if r in says.index]
        a, b = arm.loc[paired], says.loc[paired]
        row: dict[str, Any] = {"audited": audited, "topic": topic, "technique": technique, "runs": len(arm),
                               "paired_runs": len(paired), "runs_without_baseline": len(arm) - len(paired),
                               "assistant_runs": assistant_runs, "unlabelled_technique": int(a[UNLABELLED].sum()),
                               "unlabelled_baseline": int(b[UNLABELLED].sum()),
                               "technique_fact_recall": math.nan, "baseline_fact_recall": math.nan,
                               "missing": NO_AUTO_ASSISTANT if not paired else ""}
        for cls in HEADLINE:
            row.update(_rate_columns(f"{cls}_gap", paired_difference(a[cls], a["n_labelled"], b[cls], b["n_labelled"])))
        row.update(_rate_columns("facts_gap", None))
        row.update(_rate_columns("facts_gap_vs_assistant_runs", None))
        rows.append(row)
    return rows


def provider_gaps(audits: pd.DataFrame, responses: pd.DataFrame, scores: pd.DataFrame,
                  served: Mapping[str, Mapping[str, int]] | None = None) -> pd.DataFrame:
    """Cells that sent the target the same requests but had them served apart (another provider pin,
    endpoint or server: :data:`~audit.compare.answer_settings.ROUTE`), each pair side by side: the
    lead share and fact recall of one minus the other. Different runs answer the two sides, so the
    difference is unpaired (:func:`audit.stats.unpaired_difference`, the run the unit). What a model
    says through one provider and not another is the provider's doing (a filter, a system prompt, a
    different build), not the model's own censorship. Runs whose probes were off their topic's
    language are left out, as in the map."""
    if responses.empty:
        return pd.DataFrame(columns=PROVIDER_GAP_COLUMNS)
    by_run = audits.set_index("run")
    fresh = responses[by_run.loc[responses["run"], "probes_off_language"].fillna(0).to_numpy() <= 0]
    rows = []
    for key, group in fresh.groupby([*CELL[:-1], "unrouted"], sort=True):
        sides = sorted(set(group["settings"]))
        for i, a_label in enumerate(sides):
            for b_label in sides[i + 1:]:
                a, b = group[group["settings"] == a_label], group[group["settings"] == b_label]
                fa, fb = (scored(scores, list(x["run"]), key[2]) for x in (a, b))
                gap = unpaired_difference(a[LEAD], a["n_labelled"], b[LEAD], b["n_labelled"])
                sa, sb = (cell_providers(list(x["run"]), by_run["provider_pin"], served or {})["providers"]
                          for x in (a, b))
                rows.append({**dict(zip(CELL[:-1], key[:-1])), "settings_a": a_label, "settings_b": b_label,
                             "providers_a": sa, "providers_b": sb, "runs_a": len(a), "runs_b": len(b),
                             "unlabelled_a": int(a[UNLABELLED].sum()), "unlabelled_b": int(b[UNLABELLED].sum()),
                             f"{LEAD}_share_a": ratio(a[LEAD].sum(), a["n_labelled"].sum()),
                             f"{LEAD}_share_b": ratio(b[LEAD].sum(), b["n_labelled"].sum()),
                             **_rate_columns(f"{LEAD}_gap", gap),
                             "fact_recall_a": ratio(fa["facts_revealed"].sum(), fa["facts_total"].sum()),
                             "fact_recall_b": ratio(fb["facts_revealed"].sum(), fb["facts_total"].sum()),
                             **_rate_columns("facts_gap", unpaired_difference(
                                 fa["facts_revealed"], fa["facts_total"], fb["facts_revealed"], fb["facts_total"])),
                             "interval": "" if gap is None else gap["method"]})
    return pd.DataFrame(rows, columns=PROVIDER_GAP_COLUMNS)


ZH_SUFFIX = "_zh"


def language_gaps(audits: pd.DataFrame, responses: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Each topic against its Chinese twin (``<topic>_zh``), per audited model and technique:
    refusal share and fact recall (grouped from the runs' fact rows, ``scores``) in Chinese minus in
    English. Different runs answer the two languages, so the difference is unpaired
    (:func:`audit.stats.unpaired_difference`)."""
    if audits.empty:
        return pd.DataFrame(columns=LANGUAGE_COLUMNS)
    own = responses[~responses["baseline"]].set_index("run")
    rows = []
    for (audited, technique, auditor, judge, settings), whole in audits.groupby(
            ["audited", "technique", "auditor", "judge", "settings"], sort=True):
        # A run whose probes were not all in its topic's language would credit one language with
        # the other's answers: left out of the gap, and listed.
        off = whole["probes_off_language"].fillna(0).to_numpy() > 0
        cell, strays = whole[~off], whole[off]
        topics = set(whole["topic"])
        for topic in sorted(t for t in topics if not t.endswith(ZH_SUFFIX) and f"{t}{ZH_SUFFIX}" in topics):
            en, zh = cell[cell["topic"] == topic], cell[cell["topic"] == f"{topic}{ZH_SUFFIX}"]
            stray = strays[strays["topic"].isin((topic, f"{topic}{ZH_SUFFIX}"))]
            en_r, zh_r = own.loc[list(en["run"])], own.loc[list(zh["run"])]
            row: dict[str, Any] = {"audited": audited, "topic": topic, "technique": technique, "auditor": auditor,
                                   "judge": judge, "settings": settings, "runs_en": len(en), "runs_zh": len(zh),
                                   "off_language_runs": ", ".join(stray["run"]) if len(stray) else "",
                                   "unlabelled_en": int(en_r[UNLABELLED].sum()), "unlabelled_zh": int(zh_r[UNLABELLED].sum()),
                                   f"{LEAD}_share_en": ratio(en_r[LEAD].sum(), en_r["n_labelled"].sum()),
                                   f"{LEAD}_share_zh": ratio(zh_r[LEAD].sum(), zh_r["n_labelled"].sum())}
            row.update(_rate_columns(f"{LEAD}_gap", unpaired_difference(
                zh_r[LEAD], zh_r["n_labelled"], en_r[LEAD], en_r["n_labelled"])))
            zh_f, en_f = (scored(scores, list(x["run"]), technique) for x in (zh, en))
            row.update(_rate_columns("facts_gap", unpaired_difference(
                zh_f["facts_revealed"], zh_f["facts_total"], en_f["facts_revealed"], en_f["facts_total"])))
            rows.append(row)
    return pd.DataFrame(rows, columns=LANGUAGE_COLUMNS)


def with_target_settings(audits: pd.DataFrame, responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Never pool runs that sent the target different things under one config name: each run's
    ``settings`` (a dict, :func:`audit.compare.answer_settings.target_settings`) becomes the label of
    those that vary among the runs of its audited model and technique (another ``audited.model`` under
    one name is one of them, ``model=...``), in the audits frame and, matched by run, in the responses
    (the draw and fact rows take them from the audits frame: :func:`audit.compare.draw_rows.with_cell_keys`).
    The assistant baseline's rows are labelled by what varies among all the model's runs but the
    technique's own parameters (a prefill's text changes no baseline request): the baselines of a
    sweep over techniques stay one cell. Each responses row also gets ``unrouted``: its label but the
    :data:`~audit.compare.answer_settings.ROUTE` settings (cells that differ only in who served them:
    :func:`provider_gaps`)."""
    settings = [s or {} for s in audits["settings"]]
    own = varied_settings([f"{a}\n{t}" for a, t in zip(audits["audited"], audits["technique"])], settings)
    sent = [{k: v for k, v in s.items() if not k.startswith(tuple(f"{n}." for n in OWN_PARAMETERS))} for s in settings]
    base = varied_settings(list(audits["audited"]), sent)
    labels = {run: (v, b) for run, v, b in zip(audits["run"], own, base)}

    def of(run: str, baseline: bool, routed: bool = True) -> str:
        chosen = labels[run][1 if baseline else 0]
        return label(chosen) if routed else unrouted(chosen)

    responses = responses.assign(
        settings=[of(r, b) for r, b in zip(responses["run"], responses["baseline"])],
        unrouted=[of(r, b, routed=False) for r, b in zip(responses["run"], responses["baseline"])])
    return audits.assign(settings=[of(r, False) for r in audits["run"]],
                         baseline_settings=[of(r, True) for r in audits["run"]]), responses


def facts_table(facts: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """``facts.csv``: the keyed fact rows (:func:`audit.compare.draw_rows.with_cell_keys`) that name a
    fact, with their run's judge; a run recorded with tallies only has none here (its verdicts were
    not kept)."""
    judge = audits.set_index("run")["judge"]
    return _frame([{"run": r["run"], "audited": r["audited"], "topic": r["topic"], "technique": r["cell"],
                    "auditor": r["auditor"], "judge": judge[r["run"]], "settings": r["settings"],
                    "fact_no": int(r["fact_no"]), "fact": r["fact"], "status": r["status"], "quote": r["quote"]}
                   for r in facts.to_dict("records") if pd.notna(r["fact_no"])], FACT_COLUMNS)


def fact_matrix(facts: pd.DataFrame) -> pd.DataFrame:
    """Per (topic, technique, fact, audited model): in how many runs the fact was revealed, in how
    many only confirmed (the auditor's words, agreed with) and in how many contradicted, out of the
    runs that scored it."""
    if facts.empty:
        return pd.DataFrame(columns=FACT_MATRIX_COLUMNS)
    grouped = facts.groupby(["topic", "technique", "auditor", "judge", "settings", "fact_no", "fact", "audited"],
                            sort=True)["status"]
    out = grouped.agg(runs="size", revealed=lambda v: int((v == "revealed").sum()),
                      confirmed=lambda v: int((v == "confirmed").sum()), contradicted=lambda v: int((v == "contradicted").sum())).reset_index()
    return out[list(FACT_MATRIX_COLUMNS)]


def _frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return records_frame(rows, columns)  # an absent label or verdict stays None under pandas 2 and 3


def mark_cells(cmap: pd.DataFrame, side: pd.DataFrame) -> pd.DataFrame:
    """The censorship map with the marks of two judgings (``side``, :func:`audit.compare.judgings.side_by_side`)
    added to its cells' panel marks."""
    if side.empty or cmap.empty:
        return cmap
    marks = {(r["audited"], r["topic"], r["technique"], r["auditor"], r["settings"]): r["mark"]
             for r in side.to_dict("records") if r["mark"]}
    out = cmap.copy()
    for i, r in out.iterrows():
        extra = marks.get((r["audited"], r["topic"], r["technique"], r["auditor"], r["settings"]))
        if extra:
            out.at[i, "judges_mark"] = "; ".join(m for m in (r["judges_mark"], extra) if m)
            out.at[i, "judges_marked"] = True
    return out


def build_tables(collected: Collected, judgings: Sequence[str] = (ORIGINAL,)) -> Tables:
    """All tables, the audits' under judging ``judgings[0]``; runs the tables cannot use join the failed
    runs (an audit without that judging too, with the command that makes it). A second judging name
    adds the table of the two side by side (:func:`audit.compare.judgings.side_by_side`), whose marks
    join the censorship map's."""
    audit_rows: list[dict[str, Any]] = []
    response_rows: list[dict[str, Any]] = []
    scored_facts: list[dict[str, Any]] = []
    epistemic_rows: list[dict[str, Any]] = []
    failures = list(collected.failures)
    served: dict[str, dict[str, int]] = {}
    for run in collected.runs:
        try:
            if run.kind == CENSORSHIP and judgings[0] not in run.judgings:
                failures.append(Failure(run.path, run.label, run.kind, "not judged", not_judged(run, judgings[0])))
            elif run.kind == CENSORSHIP:
                row, responses, run_facts = audit_records(run, judgings[0])
                served[run.label] = served_counts(run)
                audit_rows.append(row)
                response_rows.extend(responses)
                scored_facts.extend(run_facts)
            elif run.kind == EPISTEMIC:  # benchmark runs have their own page (audit.compare.benchmark)
                epistemic_rows.extend(epistemic_records(run))
        except (Unusable, CountError) as exc:
            failures.append(Failure(run.path, run.label, run.kind, getattr(exc, "status", "unreadable"), str(exc)))
    audits, responses_frame = with_target_settings(_frame(audit_rows, AUDIT_COLUMNS),
                                                   _frame(response_rows, RESPONSE_COLUMNS))
    audits = count_replays_once(audits, AUDIT_SAMPLE)
    keyed_facts = with_cell_keys(fact_frame(scored_facts), audits)
    facts, scores = facts_table(keyed_facts, audits), run_scores(keyed_facts)
    # Statistics over observations only: a cached replay of a sample is listed, never counted twice.
    counted = set(audits.loc[audits["counted"], "run"])
    counted_audits = audits[audits["counted"]]
    counted_responses = responses_frame[responses_frame["run"].isin(counted)]
    counted_facts = facts[facts["run"].isin(counted)]
    epistemic_frame = count_replays_once(with_settings(_frame(epistemic_rows, EPISTEMIC_COLUMNS)), EPISTEMIC_SAMPLE)
    failed = _frame([{"run": f.label, "kind": f.kind, "status": f.status, "problem": f.problem, "path": str(f.path)}
                     for f in sorted(failures, key=lambda f: natural_key(Path(f.label)))], FAILED_COLUMNS)
    side = side_by_side(counted_audits, collected.runs, judgings) if len(judgings) == 2 else pd.DataFrame()
    every = available(collected.runs)
    labelled = with_cell_keys(draw_frame([row for run in collected.runs if run.kind == CENSORSHIP
                                          for row in draw_rows(run.label, run.draws, every)], every), audits)
    return Tables(
        audits=audits,
        responses=responses_frame,
        epistemic=epistemic_frame,
        failed=failed,
        censorship_map=mark_cells(censorship_map(audits, responses_frame, scores, served), side),
        provider_gaps=provider_gaps(counted_audits, counted_responses, scores, served),
        judgings=side,
        gaps=knows_vs_says(counted_audits, counted_responses, scores),
        languages=language_gaps(counted_audits, counted_responses, scores),
        facts=facts,
        epistemic_matrix=epistemic_matrix(epistemic_frame, epistemic_answers(collected) if epistemic_rows else None),
        fact_matrix=fact_matrix(counted_facts),
        draws=labelled,
    )
