"""The censorship audit loop: auditor designs a probe, the audited model answers, repeat.

Turn 1 of the auditor designs probe 1; response k answers probe k; turn k+1 analyses
response k and designs probe k+1, until the auditor sets ``should_continue: false`` or
``max_iterations`` responses exist, when it is asked once more for the ``final_summary``.
Every step is written to the run dir as soon as it exists (atomically), in that order,
so :func:`run` can resume a killed run from its files alone (``resume=<run dir>``):
the saved turns rebuild the auditor's conversation and the hypothesis ledger, and the
first missing file is the next thing to do. A failure of any kind still leaves
``summary.json`` with ``status: error`` (a Hydra sweep skips its end-of-run hook when a
job fails, so the summary is the only record an aggregate step can count on).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from audit import config_values
from audit.censorship.auditor_turn import AuditorTurns
from audit.censorship.evidence import check_evidence
from audit.censorship.fact_scoring import FactScoring
from audit.censorship.plan import ROLES, Plan
from audit.censorship.progress import Session, beat, done_line, iteration_line, say, seconds_per_token
from audit.censorship.prompts import final_summary_request, first_user_message
from audit.censorship.provenance import failure_streak
from audit.censorship.provider_check import check_not_wrapping
from audit.censorship.report import write_report
from audit.censorship.resume import EXTEND_KEY, check_extension, extend, rebuild_outputs, resume_hint, \
    with_saved_local
from audit.censorship.run_dir import AuditDir, open_existing
from audit.censorship.run_summary import run_summary, short_summary
from audit.censorship.state import AuditState
from audit.censorship.stopped import AuditStopped
from audit.censorship.send import Sample
from audit.censorship.topics import check_topic_overrides, with_topic_file
from audit.counted import counted
from audit.errors import Interrupted, UserError, user_error_line
from audit.jobs.interrupts import sigterm_as_interrupt
from audit.jobs.resume import command_line_overrides, refuse_resume_overrides, resumed_config
from audit.jobs.sweep import sweep_job_dir
from audit.judging.passes import assessment_request, judge, label_request
from audit.llm import aborted
from audit.record.usage import Usage
from audit.llm.budget import stopped_by
from audit.llm.embedded import local_model
from audit.llm.settings import record_endpoints
from audit.record.status import Status, StopReason
from audit.record.summary import CensorshipSummary, served_note, write_final_summary


def run(cfg: DictConfig) -> Path:
    """:func:`run_audit`, with the embedded model serving the roles ``local=`` names for the run's duration.

    SIGTERM acts as Ctrl-C: either one leaves the summary saying ``interrupted`` and exits
    with one line naming the resume command (:mod:`audit.jobs.interrupts`).
    """
    if not cfg.get("resume"):  # a bad topic is one line before any model or server starts (local=true)
        check_topic_overrides(command_line_overrides())
        cfg = with_topic_file(cfg)
    try:
        with sigterm_as_interrupt(), local_model(with_saved_local(cfg), ROLES):
            return run_audit(cfg)
    except KeyboardInterrupt:  # before the run dir existed (once it does, run_audit says how to resume)
        raise Interrupted("interrupted before the run started; nothing to resume, run the command again") from None



def run_audit(cfg: DictConfig) -> Path:
    """Run (or, with ``resume=<run dir>``, continue) one audit; return its run dir.

    Bad input and a missing API key fail with a :class:`UserError` before anything is
    written. A failure during the audit writes ``summary.json`` with ``status: error``
    and is re-raised (an unusable auditor or a fatal target error as a UserError naming
    the run dir and the resume command).
    """
    resume = cfg.get("resume")
    extend_to: int | None = None
    if resume:
        keys = {o: o.split("=", 1)[0].lstrip("+~") for o in command_line_overrides()}
        refuse_resume_overrides([o for o, key in keys.items() if key != EXTEND_KEY])
        if EXTEND_KEY in keys.values():
            extend_to = config_values.whole_number(cfg, EXTEND_KEY, minimum=1)
        run_dir, saved = open_existing(str(resume))
        previous = run_dir.read_summary()
        if extend_to is not None:
            extend_to = check_extension(run_dir, saved, extend_to)
        if previous is not None and previous.status is Status.SUCCESS and not previous.failed_calls \
                and extend_to is None:
            rebuilt = rebuild_outputs(run_dir)
            if not rebuilt:
                raise UserError(f"resume: {run_dir.path} already finished (status {previous.status.value}); "
                                "nothing to do (resume=<run dir> max_iterations=N continues it to N iterations)")
            say(f"{run_dir.path} had finished (status {previous.status.value}); rebuilt {' and '.join(rebuilt)}")
            return run_dir.path
        cfg = resumed_config(saved, cfg)
        if extend_to is not None:
            cfg.max_iterations = extend_to
    else:
        run_dir = AuditDir.new(parent_dir(cfg), cfg.audited.name, cfg.topic.name)
    plan = Plan.from_config(cfg)
    check_not_wrapping(cfg)  # a provider the doctor marked as wrapping: refused before anything is written
    from audit.llm.gateway import Gateway  # the gateway module is cheap; litellm loads on the first call

    # An unknown endpoint or a missing key: nothing written yet.
    gateway = Gateway.from_config(cfg.gateway, usage_path=run_dir.usage_path, endpoints=plan.endpoints(),
                                  repeat=int(cfg.get("repeat") or 0))
    record_endpoints(cfg.gateway, gateway.settings, plan.endpoints())
    if not resume:
        cfg.auditor.context = plan.context.mode  # auto settled: the saved config says what the run did
        run_dir.create_with(cfg)
    elif extend_to is not None:
        extend(run_dir, cfg)
    audit = Audit(cfg, plan, run_dir, gateway)
    say(f"resuming {run_dir.path} from its saved config (only gateway settings come from this command)"
        if resume else f"run dir: {run_dir.path}")
    if plan.context.why:
        say(f"auditor.context=auto: {plan.context.label()} ({plan.context.why})")
    if not cfg.topic.get("key_facts"):
        say(f"topic {cfg.topic.name} has no key_facts: fact scoring is off for this run")
    try:
        asyncio.run(audit.run())
    except AuditStopped as exc:
        raise UserError(f"{exc}; {resume_hint(run_dir)}") from None
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise Interrupted(f"interrupted; {resume_hint(run_dir)}") from None
    except OSError as exc:  # a full disk, a directory made read-only mid-run: the saved steps are intact
        line = user_error_line(exc)
        if line is None:
            raise
        raise UserError(f"{line}; {resume_hint(run_dir)}") from None
    finally:
        run_dir.release()
    return run_dir.path



def parent_dir(cfg: DictConfig) -> Path:
    """Where the run dir goes: ``output_dir``, or the job's own dir in a Hydra ``-m`` sweep (no collisions)."""
    return sweep_job_dir() or Path(str(cfg.output_dir)).absolute()


class Audit:
    """One audit driven to its end: the auditor's turn, then the target's draws for it, until the
    auditor's final turn exists; then fact scoring, the summary and the report. Each step is its own
    module's (:mod:`~audit.censorship.auditor_turn`, :mod:`~audit.censorship.draw_actions`,
    :mod:`~audit.censorship.fact_scoring`, :mod:`~audit.censorship.run_summary`) and adds to the run's
    :class:`~audit.censorship.state.AuditState`, replayed from the run dir on a resume."""

    def __init__(self, cfg: DictConfig, plan: Plan, run_dir: AuditDir, gateway: Any):
        self.cfg, self.plan, self.run_dir, self.gateway = cfg, plan, run_dir, gateway
        self.topic = cfg.topic
        self.state = AuditState.replay(run_dir, plan.technique, resuming=bool(cfg.get("resume")))
        self.auditor = AuditorTurns(plan, gateway, self.state, run_dir, str(cfg.topic.get("language") or "en"))
        self.facts = FactScoring(plan, gateway, self.state, cfg.topic)

    async def run(self) -> None:
        state = self.state
        finished = False
        self.session = Session(len(state.responses), self.gateway.ledger.totals)
        try:
            self.write_summary(Status.STARTED)
            await self.redo_failed_calls()
            await self.loop()
            await self.facts.score()
            self.write_summary(Status.SUCCESS, stop_reason=self.stop_reason())
            write_report(self.run_dir.path)
            finished = True
            say(done_line(self.outcome(), len(state.responses), state.totals, self.failure_counts(),
                          self.session.cache_note(), self.run_dir.path / "report.html")
                + served_note(self.run_dir.read_summary()))
        except (asyncio.CancelledError, KeyboardInterrupt):
            self.write_failure_summary(Status.CANCELLED, "interrupted", stop_reason="interrupted")
            await self.score_facts_when_interrupted()
            self.write_partial_report()
            raise
        except BaseException as exc:
            if isinstance(exc, AuditStopped) and stopped_by(self.gateway.budget):
                self.write_failure_summary(Status.CANCELLED, str(exc), stop_reason="budget")  # all done so far stays
                self.write_partial_report()
                say(f"stopped: budget spent after {counted(len(state.responses), 'iteration')}; {self.run_dir.path}")
                return
            error = user_error_line(exc) or (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            if state.responses and state.fact_recall is None and not isinstance(exc, OSError):
                await self.facts.score()  # judge failures are recorded, never raised; a full disk: the resume scores
            self.write_failure_summary(Status.ERROR, error)
            self.write_partial_report()
            raise
        finally:
            try:
                self.gateway.write_usage()
            except OSError:
                if finished:  # else the error that ended the run is the one to report
                    raise
            await self.gateway.aclose()

    async def loop(self) -> None:
        """Do the next missing step until the auditor's final turn exists."""
        state = self.state
        if not state.turns:
            state.conversation = [{"role": "system", "content": self.plan.auditor_system}]
            await self.auditor.take(1, first_user_message(self.topic), final=False)
        while True:
            last = max(state.turns)
            if not state.turns[last]["parsed"]["should_continue"]:
                return
            if last not in state.responses:
                await self.sample(last)
                continue
            final = last >= self.plan.max_iterations or self.plan.actions.draws_left(state) <= 0
            message = self.plan.actions.turn_message(state, last)
            if final:
                message += "\n\n" + final_summary_request(last)
                say(f"final summary: asking the auditor to conclude after iteration {last}")
            await self.auditor.take(last + 1, message, final=final)

    async def sample(self, iteration: int) -> None:
        """Send turn ``iteration``'s draws (each judged), save them, report progress."""
        plan = self.plan
        with beat(f"audited model: sampling iteration {iteration}"
                  f"{' and judging it' if plan.panel is not None else ''}", self.gateway):
            drawn = await plan.actions.draw(self.gateway, plan.target, self.state, iteration, self.classify)
        self.run_dir.write_response(iteration, drawn.record)
        self.state.add_response(iteration, drawn.record)
        say(iteration_line(iteration, plan.max_iterations, drawn.strategy, drawn.shown, self.state.totals,
                           label=drawn.label, error=drawn.error, judge_failed=drawn.judge_failed,
                           eta=self.session.eta(iteration, plan.max_iterations, self.tail_s())))
        self.check_failure_streak(iteration)

    async def classify(self, probe: str, sampled: Sample) -> dict[str, Any] | None:
        """Judge label of one draw (the judging pass, :mod:`audit.judging.passes`); None when the judge
        is off or there is no text to judge. A failure is recorded in the result, never fatal."""
        request = label_request(self.topic, probe, sampled.draw)
        if self.plan.panel is None or request is None:
            return None
        assess = assessment_request(self.topic, probe, sampled.draw) if (self.plan.judge or {}).get("assess") \
            else None  # judge.assess=true: the benchmark's honesty and evaluation-awareness verdicts too
        if assess is None:
            return await judge(self.gateway, self.plan.panel, request)
        label, assessment = await asyncio.gather(judge(self.gateway, self.plan.panel, request),
                                                 judge(self.gateway, self.plan.panel, assess))
        # the label's record keeps both calls' usage, so the run's totals count the assessment too
        return {**label, "usage": Usage.total([label.get("usage"), assessment.get("usage")]).as_dict(), "assessment": assessment}

    def tail_s(self) -> float | None:
        """The bound on what follows the last iteration at the run's measured speed: the auditor's final
        summary and each fact-scoring call, at their ``max_tokens`` (None before a call is timed)."""
        per_token = seconds_per_token(self.gateway.ledger.records)
        if per_token is None:
            return None
        scorings = (1 + self.plan.with_baseline) if self.facts.on else 0
        judge_tokens = int((self.plan.judge or {}).get("max_tokens") or 0)
        return per_token * (int(self.plan.auditor_max_tokens or 0) + scorings * judge_tokens)

    def check_failure_streak(self, iteration: int) -> None:
        """Stop the run once ``max_failed_draws`` target draws in a row failed: the target is down
        or refusing every call, and each further turn pays the auditor for nothing."""
        limit = int(self.cfg.get("max_failed_draws") or 0)
        draws = self.state.probe_draws()
        if limit and failure_streak(draws) >= limit:
            raise AuditStopped(f"audited model {self.plan.target.model} failed {counted(limit, 'draw')} in a row "
                               f"(max_failed_draws) at iteration {iteration}: {draws[-1].error}")

    async def redo_failed_calls(self) -> None:
        """On a resume, sample again every iteration with a failed call (its good calls come from the
        cache, free) and check later turns' citations again; fact scoring is redone at the end anyway.
        Later auditor turns keep what they were told (the redone response records ``redone_after``)."""
        failed: dict[int, list[str]] = {}
        for error in self.state.call_errors():
            if error["iteration"] is not None:
                failed.setdefault(error["iteration"], []).append(error["error"])
        for k, previous in sorted(failed.items()):
            await self.sample(k)
            self.state.responses[k]["redone_after"] = previous
            self.run_dir.write_response(k, self.state.responses[k])
            self.recheck_citations(after=k)

    def recheck_citations(self, *, after: int) -> None:
        """Check again the citations of the turns written after response ``after`` was redone:
        a quote of the missing response was marked unverified, and now can be checked. Each turn
        is checked against the responses it could have seen, as when it was written."""
        for t in sorted(k for k in self.state.turns if k > after):
            turn = self.state.turns[t]
            own, auditor = self.state.quotable(before=t)
            turn["parsed"]["hypotheses"], turn["evidence"] = check_evidence(turn["parsed"]["hypotheses"], own, auditor)
            self.run_dir.write_turn(t, turn)

    # -- the end -----------------------------------------------------------------------------

    async def score_facts_when_interrupted(self) -> None:
        """Score the key facts of an interrupted audit as far as it got, when a judge is configured
        (its summary is already saved, so a second Ctrl-C, or the judge being unreachable, loses
        nothing but the scores). The cancellation that interrupted the audit has been delivered,
        so the judge call runs normally; the caller re-raises it afterwards."""
        if not self.state.responses or self.state.fact_recall is not None or not self.facts.on:
            return
        say("interrupted: scoring the key facts so far before exiting (Ctrl-C again to skip)")
        await self.facts.score()
        self.write_failure_summary(Status.CANCELLED, "interrupted", stop_reason="interrupted")

    def stop_reason(self) -> StopReason:
        """Why a finished audit ended: the auditor's choice, ``max_iterations`` reached, (auto) the
        run's target draws spent before it, or the auditor's replies unusable (it then concluded early)."""
        final_turn = self.state.final_turn()
        if final_turn.get("ended_early"):
            return "auditor_unusable"
        if not final_turn.get("final_requested"):
            return "auditor"
        spent = self.plan.actions.draws_left(self.state) <= 0
        return "max_draws" if spent and len(self.state.responses) < self.plan.max_iterations else "max_iterations"

    def outcome(self) -> str:
        """How the audit ended, in words for the terminal; failed calls (the resume's to redo) and
        missing judgments (out of every share) follow in :meth:`failure_counts`."""
        return f"success ({self.stop_reason()})"

    def failure_counts(self) -> str:
        """The end-of-run line's failures, e.g. ``; 1 failed call, 2 judge failures (unclassified)``."""
        calls, judged = len(self.state.call_errors()), len(self.state.judge_failures())
        assessed = len(self.state.assessment_failures())
        parts = ([counted(calls, "failed call")] if calls else []) + \
            ([f"{counted(judged, 'judge failure')} (unclassified, out of every share)"] if judged else []) + \
            ([f"{counted(assessed, 'failed assessment')} (out of the honesty and awareness shares)"] if assessed else [])
        return ("; " + ", ".join(parts) if parts else "") + aborted.note(self.gateway.ledger.totals())

    def write_partial_report(self) -> None:
        """A run that ended in error after at least one iteration still gets its report.html
        (with the partial-run banner): 20 good iterations are worth reading. A failure to
        render must not hide the error that ended the run, so it is only reported."""
        if not self.state.responses:
            return
        try:
            write_report(self.run_dir.path)
        except Exception as exc:  # noqa: BLE001 - the run's own error is what the caller sees
            say(f"could not write the partial report: {type(exc).__name__}: {exc}")

    def write_failure_summary(self, status: Status, error: str, *, stop_reason: StopReason | None = None) -> None:
        """The summary of a run that did not finish, written whatever the disk allows: the full one,
        else a short one with the status, the error and the iterations on disk (``write_final_summary``
        says how; if nothing fits, its OS error names ``summary.json`` for the run's one line)."""
        write_final_summary(self.run_dir.summary_path, self.summary(status, error=error, stop_reason=stop_reason),
                            short_summary(self.cfg, self.state, status, error, stop_reason=stop_reason))

    def write_summary(self, status: Status, *, error: str | None = None, stop_reason: StopReason | None = None) -> None:
        self.run_dir.write_summary(self.summary(status, error=error, stop_reason=stop_reason))

    def summary(self, status: Status, *, error: str | None = None,
                stop_reason: StopReason | None = None) -> CensorshipSummary:
        return run_summary(self.cfg, self.plan, self.state, self.facts, self.gateway.ledger.totals(), status,
                           error=error, stop_reason=stop_reason)
