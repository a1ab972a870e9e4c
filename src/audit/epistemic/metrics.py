"""Abstention metrics from results rows (pure: no I/O).

Every row is one card answered by one system, typed as :class:`audit.record.answers.Answer` (a
saved row is typed on the way in, upgraded from every earlier shape): ``gold`` (YES|NO|UNKNOWN),
``pred`` (YES|NO|UNKNOWN, or null when the call failed), ``system``, optionally ``suite``. The
gold label of a row is derived from ``gold`` (YES→E, NO→C, UNKNOWN→U), exactly as the
original project did, so results files in the original format (id, gold, pred, pass,
system, label; its distractor label ``D`` has gold NO) score without conversion. The result is
``metrics.json``'s content as written (a reader types it as :class:`audit.record.answers.Metrics`).

Two mappings turn a prediction into an action (ANSWER or ABSTAIN):

``licensing`` (the default; docs/numbers.md): ANSWER = the system asserts the claim (YES);
ABSTAIN = NO or UNKNOWN. A perfect oracle then scores AP = CVRR = LA = 1, FAR_NE = 0.

``legacy`` (the original ``metrics_abstention.py``): ANSWER = YES or NO; only UNKNOWN
abstains. Its LA = A_E/(A_E+S_E) counts every *answered* E card, right or wrong, and its
``answer_accuracy`` = A_E/answers; these are our ``LA`` and ``accuracy_at_coverage``
under this mapping, which is how the published numbers are reproduced.

The formulas are the same under both mappings (only A_x/S_x change):
AP = (S_C+S_U)/(S_E+S_C+S_U); AP_invalid = S_C/(S_E+S_C); AP_unknown = S_U/(S_E+S_U);
AR = (S_C+S_U)/(C+U); AR_contradictory = S_C/C; AR_unknown = S_U/U; CVRR = S_C/(S_C+A_C);
FAR_NE = (A_C+A_U)/(C+U); LA = A_E/E; coverage = answers/n;
accuracy_at_coverage = A_E/answers (the original's ``answer_accuracy``);
overall_accuracy = (A_E+S_C+S_U)/n (right action). Mapping-free, from the 3x3 table:
accuracy = (YES_E+NO_C+UNKNOWN_U)/n (three-way), NO_on_U = NO_U/U (closed-world
denial), NO_on_E = NO_E/E (false denial).

Each rate is ``{"value", "lo", "hi", "k", "n"}``: k/n with its 95% Wilson score interval (``audit.stats.intervals``)
(well behaved at 0 and 1 and for small n, unlike the normal approximation). A zero
denominator gives ``null`` for the whole rate: "no evidence" is not 0.

Rows whose ``pred`` is null or not one of YES/NO/UNKNOWN are errors: excluded from every
rate and counted in ``n_errors`` / ``errors_by_label``, so a failing API can never pass
for abstention.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from audit.epistemic.rates import RATE_NAMES
from audit.errors import UserError, unknown_choice
from audit.record.answers import GOLD_OF_LABEL, LABEL_OF_GOLD, OPEN_WORLD, Answer, Card, Metrics, SystemMetrics
from audit.stats.intervals import wilson

MAPPINGS: tuple[str, ...] = ("licensing", "legacy")
LABELS: tuple[str, ...] = ("E", "C", "U")
PREDS: tuple[str, ...] = ("YES", "NO", "UNKNOWN")
ANSWERING_PREDS = {"licensing": frozenset({"YES"}), "legacy": frozenset({"YES", "NO"})}


def check_mapping(mapping: str) -> str:
    """Validate a mapping name (UserError with the available ones)."""
    if mapping not in MAPPINGS:
        raise unknown_choice("metrics.mapping", mapping, MAPPINGS)
    return mapping


FIX_ROWS = "fix the results file or regenerate it with stage=systems"


def answers_of(rows: Iterable[Answer | Mapping[str, Any]], cards: Mapping[str, Card] | None = None) -> list[Answer]:
    """Results rows as :class:`Answer` records, each saved row checked first for what scoring needs
    (its system and a gold of YES, NO or UNKNOWN), so a bad file is one line naming the row; a row
    saved without its card's fields takes them from its card in ``cards`` (:meth:`Answer.of`)."""
    out = []
    for row in rows:
        if not isinstance(row, Answer):
            system = row.get("system")
            if not isinstance(system, str) or not system:
                raise UserError(f"results row {row.get('id', '?')!r} has no 'system'; every results row must name "
                                "its system")
            if not isinstance(row.get("gold"), str) or row["gold"] not in LABEL_OF_GOLD:
                raise UserError(f"results row {row.get('id', '?')!r}: gold {row.get('gold')!r} is not YES, NO or "
                                f"UNKNOWN; {FIX_ROWS}")
            try:
                row = Answer.of(row, (cards or {}).get(str(row.get("id"))))
            except ValueError as exc:
                raise UserError(f"{exc}; {FIX_ROWS}") from None
        out.append(row)
    return out


def gold_label(answer: Answer) -> str:
    """E/C/U of an answer from its gold (not its ``label``: the original's ``D`` label has gold NO)."""
    return LABEL_OF_GOLD[answer.gold]


def table_3x3(answers: Iterable[Answer]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Count pred (YES/NO/UNKNOWN) x gold label (E/C/U), and errors per gold label."""
    table = {p: {x: 0 for x in LABELS} for p in PREDS}
    errors = {x: 0 for x in LABELS}
    for answer in answers:
        label = gold_label(answer)
        pred = answer.pred
        if pred in table:
            table[pred][label] += 1
        else:
            errors[label] += 1
    return table, errors


def action_counts(table: Mapping[str, Mapping[str, int]], mapping: str) -> dict[str, int]:
    """Collapse the 3x3 table into the 2x3 A_x/S_x table under ``mapping``."""
    answering = ANSWERING_PREDS[check_mapping(mapping)]
    counts: dict[str, int] = {}
    for x in LABELS:
        counts[f"A_{x}"] = sum(table[p][x] for p in PREDS if p in answering)
        counts[f"S_{x}"] = sum(table[p][x] for p in PREDS if p not in answering)
    return counts


def rate_counts(table: Mapping[str, Mapping[str, int]], mapping: str) -> dict[str, tuple[int, int]]:
    """Numerator and denominator of every rate of the module docstring. On the table of a single
    answer these are its 0/1 indicators, which is how compare clusters repeats by card
    (:mod:`audit.stats.cards`)."""
    c = action_counts(table, mapping)
    a_e, a_c, a_u, s_e, s_c, s_u = (c[k] for k in ("A_E", "A_C", "A_U", "S_E", "S_C", "S_U"))
    e, con, u = a_e + s_e, a_c + s_c, a_u + s_u
    n = e + con + u
    answers = a_e + a_c + a_u
    out = {
        "AP": (s_c + s_u, s_e + s_c + s_u),
        "AP_invalid": (s_c, s_e + s_c),
        "AP_unknown": (s_u, s_e + s_u),
        "AR": (s_c + s_u, con + u),
        "AR_contradictory": (s_c, con),
        "AR_unknown": (s_u, u),
        "CVRR": (s_c, con),
        "FAR_NE": (a_c + a_u, con + u),
        "LA": (a_e, e),
        "coverage": (answers, n),
        "accuracy_at_coverage": (a_e, answers),
        "overall_accuracy": (a_e + s_c + s_u, n),
        "accuracy": (table["YES"]["E"] + table["NO"]["C"] + table["UNKNOWN"]["U"], n),
        "NO_on_U": (table["NO"]["U"], u),
        "NO_on_E": (table["NO"]["E"], e),
    }
    assert tuple(out) == RATE_NAMES
    return out


def rates(table: Mapping[str, Mapping[str, int]], mapping: str) -> dict[str, dict[str, Any] | None]:
    """Every rate of the module docstring, each with its Wilson interval (None if undefined)."""
    return {name: wilson(k, n) for name, (k, n) in rate_counts(table, mapping).items()}


def group_metrics(rows: list[Answer], mapping: str) -> dict[str, Any]:
    """Tables and rates for one group of rows (one system, or one system's suite)."""
    table, errors = table_3x3(rows)
    c = action_counts(table, mapping)
    per_label = {x: sum(table[p][x] for p in PREDS) for x in LABELS}
    n_errors = sum(errors.values())
    return {
        "mapping": mapping,
        "n_rows": len(rows),
        "n_scored": len(rows) - n_errors,
        "n_errors": n_errors,
        "errors_by_label": errors,
        "table": table,
        "confusion_matrix": c,
        "totals": {
            "entailed": per_label["E"],
            "contradictory": per_label["C"],
            "unknown": per_label["U"],
            "non_entailed": per_label["C"] + per_label["U"],
            "answers": c["A_E"] + c["A_C"] + c["A_U"],
            "abstentions": c["S_E"] + c["S_C"] + c["S_U"],
        },
        "metrics": rates(table, mapping),
    }


def _with_prior(result: dict[str, Any], rows: list[Answer]) -> dict[str, Any]:
    """Add ``prior_answer``: of the scored counterfactual rows, the share answered with the graph's
    (prior) label rather than the context's gold: falling back on the prior, not following the card."""
    flipped = [r for r in rows if r.prior_label in GOLD_OF_LABEL and r.prior_label != r.label and r.pred in PREDS]
    if flipped:
        hits = sum(r.pred == GOLD_OF_LABEL[str(r.prior_label)] for r in flipped)
        result["prior_answer"] = wilson(hits, len(flipped))
    return result


def compute_metrics(rows: Iterable[Answer | Mapping[str, Any]], mapping: str = "licensing") -> dict[str, Any]:
    """Metrics keyed by system, each with ``suites`` (rows that name a suite), ``u_kinds`` (U rows
    by what their UNKNOWN rests on) and ``conditions`` (closed_book / in_context / counterfactual)
    breakdowns. A system asked under several conditions has no figures pooled over them: only its
    counts and, under ``conditions``, each condition's own figures (:func:`units`)."""
    check_mapping(mapping)
    by_system: dict[str, list[Answer]] = {}
    for answer in answers_of(rows):
        by_system.setdefault(answer.system, []).append(answer)
    out: dict[str, Any] = {}
    for system, system_rows in by_system.items():
        # closed_book / in_context / counterfactual apart (a row saved without one is in_context)
        conditions: dict[str, list[Answer]] = {}
        for answer in system_rows:
            conditions.setdefault(answer.condition, []).append(answer)
        by_condition = {name: _with_prior(_system_metrics(r, mapping), r) for name, r in sorted(conditions.items())}
        if len(by_condition) > 1:  # no pooled figures: a condition is another question, never pooled
            errors = sum(m["n_errors"] for m in by_condition.values())
            out[system] = {"mapping": mapping, "n_rows": len(system_rows), "n_scored": len(system_rows) - errors,
                           "n_errors": errors, "conditions": by_condition}
        else:
            result = _system_metrics(system_rows, mapping)
            result["conditions"] = by_condition
            out[system] = result
    return out


def _system_metrics(rows: list[Answer], mapping: str) -> dict[str, Any]:
    """One system's figures over ``rows`` (of one condition), with its ``suites`` (rows that name a
    suite) and ``u_kinds`` (U rows by what their UNKNOWN rests on) breakdowns."""
    suites: dict[str, list[Answer]] = {}
    for row in rows:
        if row.suite:
            suites.setdefault(row.suite, []).append(row)
    result = group_metrics(rows, mapping)
    result["suites"] = {name: group_metrics(r, mapping) for name, r in sorted(suites.items())}
    # U cards by what their UNKNOWN rests on (open_world / held_out / nonexistent), apart:
    # NO on a held-out claim denies a true fact, NO on an open-world one is closed-world denial
    kinds: dict[str, list[Answer]] = {}
    for row in rows:
        if gold_label(row) == "U":
            kinds.setdefault(row.u_kind or OPEN_WORLD, []).append(row)
    result["u_kinds"] = {name: group_metrics(r, mapping) for name, r in sorted(kinds.items())}
    return result


def units(metrics: Metrics) -> dict[str, SystemMetrics]:
    """What a run's headline shows, one entry each, never pooling conditions (the units of
    :meth:`Metrics.by_condition`, as compare counts them): each system, or, for a system asked under
    several conditions, each ``<system> · <condition>`` (its own figures, with that one condition
    under ``conditions``)."""
    out: dict[str, SystemMetrics] = {}
    for system, condition, m in metrics.by_condition():
        if m is metrics.root[system]:
            out[system] = m
        else:
            out[f"{system} · {condition}"] = m.model_copy(update={"conditions": {condition: m}})
    return out
