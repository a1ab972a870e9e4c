"""The summary of an audit (``summary.json``, typed :class:`CensorshipSummary`), built from its state:
the full one at every status, and the short one written when the full one cannot be."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.censorship.evidence import citation_counts
from audit.censorship.fact_scoring import FactScoring
from audit.censorship.language import language_counts
from audit.censorship.plan import Plan
from audit.censorship.provenance import served_summary
from audit.censorship.state import AuditState
from audit.judging.judge import label_counts
from audit.judging.panel_summary import cell_items, panel_summary, run_items, run_judgments
from audit.record.draws import blocked_counts, judgments
from audit.record.rundir import iso, utc_now
from audit.record.status import Status, StopReason
from audit.record.summary import CensorshipSummary
from audit.record.usage import Usage


def run_summary(cfg: DictConfig, plan: Plan, state: AuditState, facts: FactScoring, ledger: Usage,
                status: Status, *, error: str | None = None, stop_reason: StopReason | None = None
                ) -> CensorshipSummary:
    """The full summary; ``ledger`` is the gateway ledger's totals (every session's calls)."""
    last = state.turns[max(state.turns)] if state.turns else None
    parsed = last["parsed"] if last else {}
    final_hypotheses = parsed.get("hypotheses", [])
    call_errors = state.call_errors()
    draws = state.draws()
    return CensorshipSummary(
        status=status,
        stop_reason=stop_reason,
        error=error,
        started_at=state.started_at,
        finished_at=iso(utc_now()) if status is not Status.STARTED else None,
        resumes=state.resumes,
        repeat=int(cfg.get("repeat") or 0),
        # Call counts, tokens and cost are the ledger's (every session's calls, failed ones and
        # their retries included), so they equal usage.json; parse failures come from the files.
        usage=ledger,
        failed_calls=len(call_errors),
        config=OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
        total_iterations=len(state.responses),
        final_hypotheses=final_hypotheses,
        final_summary=parsed.get("final_summary"),
        technique=plan.technique,
        with_baseline=plan.with_baseline,
        totals={**state.totals.as_dict(), **ledger.as_dict()},
        evidence=citation_counts(final_hypotheses),
        classifications=label_counts(judgments(d for d in draws if not d.is_baseline)),
        draw_classifications=plan.actions.by_technique(draws),
        baseline_classifications=label_counts(judgments(d for d in draws if d.is_baseline))
        if plan.with_baseline else None,
        fact_recall=state.fact_recall,
        baseline_fact_recall=state.baseline_fact_recall,
        fact_scoring=facts.why(),
        hypothesis_history=state.ledger.history(),
        audited_errors=sum(d.error is not None for d in draws if not d.is_baseline),
        blocked=blocked_counts(draws),
        failed_turn=state.failed_turn,
        failed_turns=state.failed_turns,
        call_errors=call_errors,
        judge_failures=state.judge_failures(),
        assessment_failures=state.assessment_failures(),
        probe_language=language_counts((r.get("probe_language") for r in state.responses.values()),
                                       str(cfg.topic.get("language") or "en")),
        repairs=[{"iteration": k, "repair": r} for k, t in sorted(state.turns.items()) for r in t.get("repairs") or []],
        judge_panel=judge_panel(plan, state),
        served=served_summary(state.probe_draws(), plan.target.provider),
    )


def short_summary(cfg: DictConfig, state: AuditState, status: Status, error: str, *,
                  stop_reason: StopReason | None = None) -> CensorshipSummary:
    """What is written when the full summary cannot be (a full disk): the status, the error and the
    iterations on disk."""
    return CensorshipSummary(
        status=status, stop_reason=stop_reason, error=error, total_iterations=len(state.responses),
        started_at=state.started_at, finished_at=iso(utc_now()), resumes=state.resumes,
        repeat=int(cfg.get("repeat") or 0), note="short summary: the full one could not be written")


def judge_panel(plan: Plan, state: AuditState) -> dict[str, Any] | None:
    """The panel's outcomes, member failures and agreement (None for a single judge or none)."""
    if plan.panel is None:
        return None
    draws = state.draws()
    found = (draws, state.fact_recall, state.baseline_fact_recall)
    return panel_summary(plan.panel, run_items(*found), run_judgments(*found), cells=cell_items(draws))
