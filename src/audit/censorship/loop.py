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
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from audit.counted import counted
from audit import config_values
from audit.llm.accounting import Totals, call_usage
from audit.censorship.actions import Action, check_menu
from audit.censorship.auditor_context import LEDGER, AuditorContext, ledger_messages, stable_prefix
from audit.censorship.auto_view import auto_turn_message
from audit.censorship.conversations import Tree, answered, check_action, plan_draws, saved_draws
from audit.censorship.evidence import check_evidence, citation_counts, quotable
from audit.quotes import Responses
from audit.censorship.hypotheses import HypothesisLedger
from audit.judging.judge import fact_scores, label_counts
from audit.judging.passes import fact_numbers, fact_request, judge, label_request
from audit.censorship.language import WrongLanguage, check_probe, language_counts, \
    measure as measure_language
from audit.censorship.progress import Session, done_line, iteration_line
from audit.censorship.provenance import failure_streak, served_summary
from audit.censorship.provider_check import check_not_wrapping
from audit.censorship.prompts import auditor_system_prompt, auto_output_format, final_summary_request, \
    first_user_message, reask_message, turn_message
from audit.censorship.report import REPORT, write_report
from audit.censorship.run_dir import AuditDir, open_existing
from audit.judging.prompts import topic_heading
from audit.censorship.schema import Menu, ReplyError, parse_auditor_reply, reask_stage, response_formats, stage_of
from audit.censorship.techniques import Sample, Target, check_technique, draw_name, sample, send, text_of
from audit.censorship.topics import check_topic_overrides, with_topic_file
from audit.errors import Interrupted, UserError, user_error_line
from audit.jobs.interrupts import sigterm_as_interrupt
from audit.io.atomic import write_text
from audit.llm.embedded import chosen_roles, local_model
from audit.llm.settings import record_endpoints, role_endpoint, role_routing
from audit.llm.budget import stopped_by
from audit.llm.ledger import Ledger
from audit.llm.structured import check_mode
from audit.llm.types import FATAL_KINDS, GatewayError, LLMResponse
from audit.judging.panel import Panel, panel_from_node
from audit.judging.panel_summary import cell_items, panel_summary, run_items, run_judgments
from audit.jobs.resume import command_line_overrides, load_saved_config, refuse_resume_overrides, resumed_config
from audit.runs.draws import AUTO, Draw, iteration_draws, judgments, run_draws
from audit.runs.rundir import iso, utc_now
from audit.runs.status import Status, StopReason
from audit.runs.summary import CensorshipSummary, served_note, write_final_summary
from audit.usage import Usage
from audit.jobs.sweep import sweep_job_dir
from audit.templates import get_family

class AuditStopped(Exception):
    """The audit cannot go on (auditor unusable, fatal target error); the run dir says why."""

    def __init__(self, message: str, *, failed_turn: dict[str, Any] | None = None):
        super().__init__(message)
        self.failed_turn = failed_turn


@dataclass(frozen=True)
class Plan:
    """The checked settings of one audit, read once from the config."""

    technique: str
    auditor_system: str
    with_baseline: bool
    prefill: str
    target: Target
    auditor_model: str
    auditor_max_tokens: int | None
    auditor_temperature: float | None
    auditor_endpoint: str
    auditor_structured: str
    max_reask: int
    judge: Mapping[str, Any] | None
    max_iterations: int
    panel: Panel | None = None
    menu: Menu | None = None
    """``technique=auto``: the actions the auditor may choose from (None: a fixed technique)."""
    max_draws: int | None = None
    """``technique=auto``: target draws in the whole run; spent, the next turn is the final one."""
    output_format: str | None = None
    """The OUTPUT FORMAT the auditor is shown (and re-asked with); None: the spec's."""
    context: AuditorContext = AuditorContext()
    """What the auditor is shown each turn (``auditor.context``: the whole transcript or the ledger)."""

    def endpoints(self) -> list[str]:
        """The endpoints this audit calls (their keys are required before anything is written)."""
        roles = [self.auditor_endpoint, self.target.endpoint]
        return roles + (self.panel.endpoints() if self.panel is not None else [])

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Plan:
        """Validate what can be validated before anything is written (bad input: UserError)."""
        name = str(cfg.technique.name)
        technique = AUTO if name == AUTO else check_technique(name)  # the fixed ones' message lists only them
        menu, max_draws, output = None, None, None
        if technique == AUTO:
            batch_max = config_values.whole_number(cfg, "technique.batch_max", minimum=1)
            max_draws = config_values.whole_number(cfg, "technique.max_draws", minimum=1)
            assert batch_max is not None and max_draws is not None
            menu = Menu(check_menu(cfg.technique.get("menu") or []), batch_max)
            output = auto_output_format(menu.actions, batch_max=batch_max, max_draws=max_draws)
        try:
            auditor_system = auditor_system_prompt(cfg.topic, technique, output)
            topic_heading(cfg.topic)  # the judge's topic text: checked now, not at the first judge call
        except ValueError as exc:
            raise UserError(f"{exc} (topic {cfg.topic.get('name')!r}); set it in the topic's yaml "
                            "or on the command line, e.g. topic.description=...") from None
        max_iterations = config_values.whole_number(cfg, "max_iterations", minimum=1)
        try:
            context = AuditorContext.from_node(cfg.auditor)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        max_reask = config_values.whole_number(cfg, "auditor.max_reask", minimum=0, optional=True)
        config_values.model_id(cfg, "auditor.model")
        config_values.model_id(cfg, "audited.model")
        for role in ("sampling", "auditor", "judge"):
            config_values.temperature(cfg, f"{role}.temperature")
            config_values.max_tokens(cfg, f"{role}.max_tokens")
        judge = cfg.get("judge")
        # judge.models / judge.samples checked here; None: judge off
        panel = panel_from_node(judge, local="judge" in chosen_roles(cfg.get("local"), ROLES))
        audited = cfg.audited
        role_routing(cfg.auditor, "auditor")  # checked now, not at the first auditor call
        return cls(
            technique=technique,
            auditor_system=auditor_system,
            # auto: the auditor asks for assistant draws itself when it wants what the model says
            with_baseline=bool(cfg.technique.get("with_baseline", False)) and technique not in ("assistant", AUTO),
            prefill=str(cfg.technique.get("prefill_text") or ""),
            target=Target(
                model=str(audited.model),
                family=get_family(str(audited.template)),
                provider=role_routing(audited, "audited")["provider"],
                extra_body=role_routing(audited, "audited")["extra_body"],
                assistant_max_tokens=audited.get("assistant_max_tokens"),
                system_prompt=audited.get("system_prompt"),
                max_tokens=cfg.sampling.get("max_tokens"),
                temperature=cfg.sampling.get("temperature"),
                endpoint=role_endpoint(audited),
            ),
            auditor_model=str(cfg.auditor.model),
            auditor_max_tokens=cfg.auditor.get("max_tokens"),
            auditor_temperature=cfg.auditor.get("temperature"),
            auditor_endpoint=role_endpoint(cfg.auditor),
            auditor_structured=check_mode(str(cfg.auditor.get("structured_output", "auto"))),
            max_reask=2 if max_reask is None else max_reask,
            judge=OmegaConf.to_container(judge, resolve=True) if panel is not None else None,
            max_iterations=max_iterations,
            panel=panel,
            menu=menu,
            max_draws=max_draws,
            output_format=output,
            context=context,
        )


ROLES = ("auditor", "audited", "judge")
"""The model roles of an audit; ``local=true`` routes all of them to the embedded model, ``local=[...]`` some."""


def run(cfg: DictConfig) -> Path:
    """:func:`run_audit`, with the embedded model serving the roles ``local=`` names for the run's duration.

    SIGTERM acts as Ctrl-C: either one leaves the summary saying ``interrupted`` and exits
    with one line naming the resume command (:mod:`audit.jobs.interrupts`).
    """
    try:
        with sigterm_as_interrupt(), local_model(with_saved_local(cfg), ROLES):
            return run_audit(cfg)
    except KeyboardInterrupt:  # before the run dir existed (once it does, run_audit says how to resume)
        raise Interrupted("interrupted before the run started; nothing to resume, run the command again") from None


def with_saved_local(cfg: DictConfig) -> DictConfig:
    """``cfg``, with ``local=`` taken from the saved run on a resume: its roles were routed to the
    embedded model, which must serve them again (on a new port, in this command's gateway), and a
    resume's command line cannot say ``local=``. An unreadable run dir is left to :func:`open_existing`."""
    saved_path = Path(str(cfg.get("resume"))).expanduser() / "config.yaml" if cfg.get("resume") else None
    if saved_path is not None and saved_path.is_file():
        with open_dict(cfg):
            cfg.local = load_saved_config(saved_path).get("local", False)
    return cfg


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
        check_topic_overrides(command_line_overrides())
        cfg = with_topic_file(cfg)
        run_dir = AuditDir.new(parent_dir(cfg), cfg.audited.name, cfg.topic.name)
    plan = Plan.from_config(cfg)
    check_not_wrapping(cfg)  # a provider the doctor marked as wrapping: refused before anything is written
    from audit.llm.gateway import Gateway  # the gateway module is cheap; litellm loads on the first call

    # An unknown endpoint or a missing key: nothing written yet.
    gateway = Gateway.from_config(cfg.gateway, usage_path=run_dir.usage_path, endpoints=plan.endpoints(),
                                  repeat=int(cfg.get("repeat") or 0))
    record_endpoints(cfg.gateway, gateway.settings, plan.endpoints())
    if not resume:
        run_dir.create_with(cfg)
    elif extend_to is not None:
        extend(run_dir, cfg)
    audit = Audit(cfg, plan, run_dir, gateway)
    say(f"resuming {run_dir.path} from its saved config (only gateway settings come from this command)"
        if resume else f"run dir: {run_dir.path}")
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


def rebuild_outputs(run_dir: AuditDir) -> list[str]:
    """Write what a finished run is missing, with no model call: ``usage.json`` from the ledger's
    journal and ``report.html`` from the run's files (a kill after the final summary leaves a run
    without them). Returns the names written."""
    rebuilt = []
    if not run_dir.usage_path.exists():
        Ledger(run_dir.usage_path.with_suffix(".jsonl")).write(run_dir.usage_path)
        rebuilt.append(run_dir.usage_path.name)
    if not (run_dir.path / REPORT).exists():
        write_report(run_dir.path)
        rebuilt.append(REPORT)
    return rebuilt


EXTEND_KEY = "max_iterations"
"""The one experiment setting a resume may change: a larger cap continues the audit."""


def check_extension(run_dir: AuditDir, saved: DictConfig, n: int) -> int | None:
    """``max_iterations=n`` on a resume: the cap to continue to, None when it changes nothing,
    or a one-line UserError when the audit cannot continue to it (checked before any change)."""
    saved_cap = int(saved.get(EXTEND_KEY) or 0)
    if n == saved_cap:
        return None
    saved_turns = run_dir.scan()
    done = len([k for k in saved_turns.responses if k in saved_turns.turns])
    if n < max(saved_cap, done):
        raise UserError(f"resume: {run_dir.path} runs to max_iterations={saved_cap} and has {done} iteration(s); "
                        f"give a larger max_iterations to continue it")
    if saved_turns.turns:
        last = saved_turns.turns[max(saved_turns.turns)]
        if not last.get("final_requested") and not last["parsed"].get("should_continue", True):
            raise UserError(f"resume: the auditor ended {run_dir.path} itself at iteration {done} (it wrote its "
                            "final summary without being asked), so there is no probe to continue from; "
                            "start a new run with a larger max_iterations")
    return n


def extend(run_dir: AuditDir, cfg: DictConfig) -> None:
    """Continue an audit to ``cfg.max_iterations``: the saved config says the new cap (a later
    resume keeps it) and a final turn the old cap forced is set aside (kept beside, never read), so
    the auditor goes on from its last probe as if the cap had always been the new one."""
    write_text(run_dir.config_path, OmegaConf.to_yaml(cfg, resolve=True))
    turns = run_dir.scan().turns
    if turns and turns[max(turns)].get("final_requested"):
        kept = run_dir.set_aside_turn(max(turns))
        say(f"continuing to max_iterations={cfg.max_iterations}; the final turn the old cap forced is kept as "
            f"{kept.name}")


def resume_hint(run_dir: AuditDir) -> str:
    return f"partial results in {run_dir.path}; continue with: {run_dir.resume_command}"


def parent_dir(cfg: DictConfig) -> Path:
    """Where the run dir goes: ``output_dir``, or the job's own dir in a Hydra ``-m`` sweep (no collisions)."""
    return sweep_job_dir() or Path(str(cfg.output_dir)).absolute()


class Audit:
    """State of one audit: the saved files in memory, the auditor conversation, the ledger, totals."""

    def __init__(self, cfg: DictConfig, plan: Plan, run_dir: AuditDir, gateway: Any):
        self.cfg = cfg
        self.plan = plan
        self.run_dir = run_dir
        self.gateway = gateway
        self.topic = cfg.topic
        self.language = str(cfg.topic.get("language") or "en")
        saved = run_dir.scan()
        self.turns = saved.turns
        # A response without the turn that asked for it cannot be part of this history.
        self.responses = {k: v for k, v in saved.responses.items() if k in self.turns}
        self.ledger = HypothesisLedger.replay([(k, t["parsed"]["hypotheses"]) for k, t in sorted(self.turns.items())])
        self.conversation = conversation_after(self.turns[max(self.turns)]) if self.turns else None
        previous = run_dir.read_summary()
        # Turns the auditor never completed live only in the summary; keeping them across a
        # resume keeps their raw replies and their calls in the totals.
        self.failed_turns: list[dict[str, Any]] = list(previous.failed_turns) if isinstance(
            previous, CensorshipSummary) else []
        self.totals = Totals()
        for record in self._usage_records():
            self.totals.add(record)
        self.totals.parse_failures = sum(len(t.get("attempts") or []) for t in [*self.turns.values(),
                                                                                 *self.failed_turns])
        self.started_at = (previous.started_at if previous else None) or iso(utc_now())
        self.resumes = list(previous.resumes) if previous else []
        if cfg.get("resume"):
            self.resumes.append(iso(utc_now()))
        self.formats = response_formats(plan.menu)
        self.failed_turn: dict[str, Any] | None = None
        self.fact_recall: dict[str, Any] | None = None
        self.baseline_fact_recall: dict[str, Any] | None = None

    # -- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        finished = False
        self.session = Session(len(self.responses), self.gateway.ledger.totals)
        try:
            self.write_summary(Status.STARTED)
            await self.redo_failed_calls()
            await self.loop()
            await self.score_facts()
            self.write_summary(Status.SUCCESS, stop_reason=self.stop_reason())
            write_report(self.run_dir.path)
            finished = True
            say(done_line(self.outcome(), len(self.responses), self.totals, self.failure_counts(),
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
                say(f"stopped: budget spent after {counted(len(self.responses), 'iteration')}; {self.run_dir.path}")
                return
            error = user_error_line(exc) or (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            if self.responses and self.fact_recall is None and not isinstance(exc, OSError):
                await self.score_facts()  # judge failures are recorded, never raised; a full disk: the resume scores
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
        if not self.turns:
            self.conversation = [{"role": "system", "content": self.plan.auditor_system}]
            await self.auditor_turn(1, first_user_message(self.topic), final=False)
        while True:
            last = max(self.turns)
            if not self.turns[last]["parsed"]["should_continue"]:
                return
            if last not in self.responses:
                await self.sample(last)
                continue
            final = last >= self.plan.max_iterations or self.draws_left() <= 0
            message = self.turn_message(last)
            if final:
                message += "\n\n" + final_summary_request(last)
                say(f"final summary: asking the auditor to conclude after iteration {last}")
            await self.auditor_turn(last + 1, message, final=final)

    def turn_message(self, iteration: int) -> str:
        response = self.responses[iteration]
        if self.plan.menu is not None:
            return auto_turn_message(iteration, response["action"], response["draws"],
                                     self.tree(before=iteration + 1), self.draws_left())
        baseline = response.get("baseline")
        return turn_message(iteration, text_of(response), technique=self.plan.technique,
                            baseline_text=text_of(baseline) if baseline else None,
                            response_error=response.get("error"),
                            baseline_error=baseline.get("error") if baseline else None)

    # -- the auditor -------------------------------------------------------------------------

    async def auditor_turn(self, iteration: int, message: str, *, final: bool) -> None:
        """Ask the auditor, re-asking with the parse error on an unusable reply (bounded)."""
        messages = self.auditor_messages(message)
        stable = stable_prefix(self.plan.context, messages)  # re-asks extend the request past it
        attempts: list[dict[str, Any]] = []
        unusable: list[LLMResponse] = []
        usages: list[dict[str, Any]] = []
        stage = schema = stage_of(iteration, final=final)
        # A resume of a turn that failed before draws fresh replies: the cached ones are the failure.
        earlier_failures = sum(f.get("iteration") == iteration for f in self.failed_turns)
        for attempt in range(self.plan.max_reask + 1):
            try:
                response = await self.gateway.achat(
                    self.plan.auditor_model, messages, max_tokens=self.plan.auditor_max_tokens,
                    temperature=self.plan.auditor_temperature, tag="auditor", endpoint=self.plan.auditor_endpoint,
                    response_format=self.formats[schema], structured=self.plan.auditor_structured,
                    sample_index=earlier_failures, cache_prefix=stable, **role_routing(self.cfg.auditor, "auditor"))
            except GatewayError as exc:
                raise AuditStopped(f"auditor {self.plan.auditor_model} failed at turn {iteration}: {exc}",
                                   failed_turn=self._failed(iteration, messages, attempts)) from exc
            except asyncio.CancelledError:
                if attempts:  # unusable replies already paid for: the summary keeps them for the resume
                    self._failed(iteration, messages, attempts)
                raise
            usages.append(call_usage(response))
            self.totals.add(usages[-1])
            try:
                reply = parse_auditor_reply(response.text, stage=stage, menu=self.plan.menu)
                if reply.action is not None:
                    self.check_action(reply.action, iteration)
                check_probe(reply.next_prompt, self.language)
                break
            except ReplyError as exc:
                self.totals.parse_failures += 1
                attempts.append({"raw_response": response.text, "error": str(exc), "usage": usages[-1].as_dict()})
                unusable.append(response)
                if attempt == self.plan.max_reask:
                    if isinstance(exc, WrongLanguage):  # usable: sent, and the mismatch is recorded
                        attempts.pop()
                        self.totals.parse_failures -= 1
                        break
                    self.gateway.forget(*unusable)  # a resume asks afresh instead of replaying the failed turn
                    raise AuditStopped(
                        f"auditor gave no usable reply at turn {iteration} after {attempt} re-asks: {exc}",
                        failed_turn=self._failed(iteration, messages, attempts)) from None
                messages = [*messages, {"role": "assistant", "content": response.text},
                            {"role": "user", "content": reask_message(str(exc), self.plan.output_format)}]
                schema = reask_stage(stage, response.text)
        parsed = reply.as_dict()
        parsed["hypotheses"], counts = check_evidence(parsed["hypotheses"], *self.quotable())
        record = {
            "iteration": iteration,
            "timestamp": iso(utc_now()),
            "input_messages": messages,
            "raw_response": response.text,
            "parsed": parsed,
            "attempts": attempts,
            "hypothesis_delta": self.ledger.update(iteration, parsed["hypotheses"]),
            "evidence": counts,
            "repairs": reply.repairs,
            "final_requested": final,
            "usage": Usage.total(usages).as_dict(),
        }
        self.run_dir.write_turn(iteration, record)
        self.turns[iteration] = record
        self.conversation = conversation_after(record)

    def auditor_messages(self, message: str) -> list[dict[str, Any]]:
        """The auditor's request for the next turn: the conversation so far plus ``message``, or under
        ``auditor.context=ledger`` the bounded context :mod:`~audit.censorship.auditor_context` builds."""
        if self.plan.context.mode == LEDGER:
            return ledger_messages(self.plan.auditor_system, self.turns, message, keep=self.plan.context.turns)
        assert self.conversation is not None
        return [*self.conversation, {"role": "user", "content": message}]

    def _failed(self, iteration: int, messages: list[dict[str, Any]], attempts: list[dict[str, Any]]) -> dict[str, Any]:
        self.failed_turn = {"iteration": iteration, "input_messages": messages, "attempts": attempts}
        self.failed_turns.append(self.failed_turn)
        return self.failed_turn

    # -- the audited model -------------------------------------------------------------------

    async def sample(self, iteration: int) -> None:
        """Sample probe ``iteration`` (and its assistant baseline), classify, save, report progress."""
        if self.plan.menu is not None:
            return await self.act(iteration)
        probe = self.turns[iteration]["parsed"]["next_prompt"]
        plan = self.plan
        jobs = [sample(self.gateway, plan.target, plan.technique, probe, prefill=plan.prefill,
                       sample_index=iteration)]
        if plan.with_baseline:
            jobs.append(sample(self.gateway, plan.target, "assistant", probe, sample_index=iteration,
                               tag="baseline", run_technique=plan.technique))
        samples = await asyncio.gather(*jobs)
        main = samples[0]
        if main.error_kind in FATAL_KINDS:  # no later probe can avoid these; other failures are recorded
            raise AuditStopped(f"audited model {plan.target.model} failed at iteration {iteration}: "
                               f"{main.record['error']}")
        labels = await asyncio.gather(*(self.classify(probe, s) for s in samples))
        record: dict[str, Any] = {"iteration": iteration, "timestamp": iso(utc_now()), **main.record,
                                  "probe_language": measure_language(probe),
                                  "classification": labels[0], "baseline": None}
        if plan.with_baseline:
            record["baseline"] = {**samples[1].record, "classification": labels[1]}
        self.run_dir.write_response(iteration, record)
        self.responses[iteration] = record
        for usage in _response_usages(record):
            self.totals.add(usage)
        say(iteration_line(iteration, plan.max_iterations, self.turns[iteration]["parsed"].get("prompt_strategy"),
                           main.text, self.totals, label=(labels[0] or {}).get("label"),
                           error=main.record["error"],
                           judge_failed=labels[0] is not None and not labels[0].get("label"),
                           eta=self.session.eta(iteration, plan.max_iterations)))
        self.check_failure_streak(iteration)

    # -- technique=auto ------------------------------------------------------------------------

    def tree(self, *, before: int | None = None) -> Tree:
        """The conversation tree of the saved draws (of iterations before ``before``: what an
        action was planned on, so a redone iteration gets the same conversation ids)."""
        return Tree.of(d for k, r in sorted(self.responses.items()) if before is None or k < before
                       for d in saved_draws(r))

    def draw_classifications(self) -> dict[str, dict[str, int]] | None:
        """``technique=auto``: judge labels per technique of the draws, so compare reads each technique's
        responses of one auto run apart (never pooled), each draw counted once; None otherwise."""
        if self.plan.menu is None:
            return None
        auto = [d for d in self.draws() if d.auto]
        return {t: label_counts(judgments(d for d in auto if d.technique == t))
                for t in sorted({d.technique for d in auto})}

    def draws_left(self) -> int:
        """Target draws the run may still make (``technique.max_draws``; a fixed technique: no cap)."""
        if self.plan.max_draws is None:
            return sys.maxsize
        return self.plan.max_draws - len(self.draws())

    def check_action(self, action: Action, iteration: int) -> None:
        """An action that does not fit the tree or the draws left is the auditor's to fix (a re-ask)."""
        tree = self.tree(before=iteration)
        problem = check_action(action, tree)
        if problem is None and action.draws > self.draws_left():
            problem = (f"this action needs {action.draws} target draws but only {self.draws_left()} are left "
                       "(technique.max_draws); choose a smaller one or finish with a final_summary")
        if problem is None:
            try:  # e.g. a legacy fixed-string family has no slot for earlier turns or a system prompt
                plan_draws(action, tree, self.plan.target.family, self.plan.target.system_prompt, iteration)
            except UserError as exc:
                problem = f"the target's chat template cannot send this action: {exc}"
        if problem is not None:
            raise ReplyError(problem)

    async def act(self, iteration: int) -> None:
        """Carry out auditor turn ``iteration``'s action: its draws in parallel (each its own cache
        entry, so a resume after a kill mid-batch re-sends none that were answered), each classified,
        saved as one response file with the draws' places in the conversation tree."""
        parsed = self.turns[iteration]["parsed"]
        action = Action(parsed["action"]["kind"], {k: v for k, v in parsed["action"].items() if k != "kind"})
        plan = self.plan
        tree = self.tree(before=iteration)
        plans = plan_draws(action, tree, plan.target.family, plan.target.system_prompt, iteration)
        samples = await asyncio.gather(*(
            send(self.gateway, plan.target, dict(p.fields), prompt=p.prompt, messages=p.messages, stops=p.stops,
                 sample_index=iteration, tag=f"audited/{action.kind}", draw=draw_name(AUTO, f"draw {p.fields['id']}"))
            for p in plans))
        fatal = [s for s in samples if s.error_kind in FATAL_KINDS]
        if fatal:
            raise AuditStopped(f"audited model {plan.target.model} failed at iteration {iteration}: "
                               f"{fatal[0].record['error']}")
        labels = await asyncio.gather(*(self.classify(answered(s.record, tree), s) for s in samples))
        draws = [{**s.record, "classification": label} for s, label in zip(samples, labels)]
        record: dict[str, Any] = {"iteration": iteration, "timestamp": iso(utc_now()), "technique": AUTO,
                                  "action": action.as_dict(), "draws": draws,
                                  "probe_language": measure_language(action.shown()), "baseline": None}
        self.run_dir.write_response(iteration, record)
        self.responses[iteration] = record
        for usage in _response_usages(record):
            self.totals.add(usage)
        first = draws[0]
        shown = first.get("raw_response") if len(draws) == 1 else f"{len(draws)} draws: {first.get('raw_response')}"
        say(iteration_line(iteration, plan.max_iterations, action.kind, shown, self.totals,
                           label=(first.get("classification") or {}).get("label"), error=first.get("error"),
                           eta=self.session.eta(iteration, plan.max_iterations)))
        self.check_failure_streak(iteration)

    def check_failure_streak(self, iteration: int) -> None:
        """Stop the run once ``max_failed_draws`` target draws in a row failed: the target is down
        or refusing every call, and each further turn pays the auditor for nothing."""
        limit = int(self.cfg.get("max_failed_draws") or 0)
        draws = [d for _, r in sorted(self.responses.items()) for d in saved_draws(r)]
        if limit and failure_streak(draws) >= limit:
            raise AuditStopped(f"audited model {self.plan.target.model} failed {counted(limit, 'draw')} in a row "
                               f"(max_failed_draws) at iteration {iteration}: {draws[-1]['error']}")

    async def classify(self, probe: str, sampled: Sample) -> dict[str, Any] | None:
        """Judge label of one draw (the judging pass, :mod:`audit.judging.passes`); None when the judge
        is off or there is no text to judge. A failure is recorded in the result, never fatal."""
        request = label_request(self.topic, probe, sampled.record)
        if self.plan.panel is None or request is None:
            return None
        return await judge(self.gateway, self.plan.panel, request)

    # -- the end -----------------------------------------------------------------------------

    async def score_facts(self) -> None:
        """Fact recall and contradictions: which of the topic's key facts the technique's responses
        reveal (a verified quote) or contradict. The auditor's summary is no source. With a baseline,
        the assistant's responses to the same probes are scored on their own: pooling them with the
        technique's would mix what the model knows with what it says. No response, no score (n/a)."""
        facts = [str(f) for f in (self.topic.get("key_facts") or [])]
        if self.plan.judge is None or not facts:
            return
        say(f"scoring key facts: {counted(len(facts), 'fact')} over the target's responses"
            f"{' and, apart, the baseline' if self.plan.with_baseline else ''} (judge)")
        self.fact_recall = await self._fact_scores(facts, self.scored_records())
        if self.plan.with_baseline:
            self.baseline_fact_recall = await self._fact_scores(
                facts, fact_numbers(self.draws(), baseline=True))

    def scored_records(self) -> dict[int, Draw]:
        """The responses fact scoring reads, numbered as the judge reads them (:func:`fact_numbers`)."""
        return fact_numbers(self.draws(), baseline=False)

    async def score_facts_when_interrupted(self) -> None:
        """Score the key facts of an interrupted audit as far as it got, when a judge is configured
        (its summary is already saved, so a second Ctrl-C, or the judge being unreachable, loses
        nothing but the scores). The cancellation that interrupted the audit has been delivered,
        so the judge call runs normally; the caller re-raises it afterwards."""
        if not self.responses or self.fact_recall is not None or self.plan.judge is None \
                or not self.topic.get("key_facts"):
            return
        say("interrupted: scoring the key facts so far before exiting (Ctrl-C again to skip)")
        await self.score_facts()
        self.write_failure_summary(Status.CANCELLED, "interrupted", stop_reason="interrupted")

    async def _fact_scores(self, facts: list[str], records: Mapping[int, Draw]) -> dict[str, Any] | None:
        """One fact-scoring judgment over the response ``records`` (numbered as the judge reads them)
        and its counts; None when there is no response text (nothing to quote: recall is n/a, not 0)."""
        request = fact_request(self.topic, facts, records)
        if request is None or self.plan.panel is None:
            return None
        result = await judge(self.gateway, self.plan.panel, request)
        self.totals.add(result.get("usage"))
        return fact_scores(len(facts), request.responses, result)

    def fact_scoring(self) -> str:
        """Why the summary has (or lacks) fact scores, in words a reader of the summary needs."""
        if not self.topic.get("key_facts"):
            return "off: the topic has no key_facts"
        if self.plan.judge is None:
            return "off: no judge"
        if self.fact_recall is None:
            has_text = any(d.raw_response is not None for d in self.scored_records().values())
            return "not yet scored" if has_text else "n/a: no response text to score (recall is not 0)"
        if self.fact_recall.get("error") is not None:
            return "failed: the judge gave no usable verdicts (recall is not 0; see judge_failures)"
        return "scored"

    def write_partial_report(self) -> None:
        """A run that ended in error after at least one iteration still gets its report.html
        (with the partial-run banner): 20 good iterations are worth reading. A failure to
        render must not hide the error that ended the run, so it is only reported."""
        if not self.responses:
            return
        try:
            write_report(self.run_dir.path)
        except Exception as exc:  # noqa: BLE001 - the run's own error is what the caller sees
            say(f"could not write the partial report: {type(exc).__name__}: {exc}")

    def failure_counts(self) -> str:
        """The end-of-run line's failures, e.g. ``; 1 failed call, 2 judge failures (unclassified)``."""
        calls, judged = len(self.call_errors()), len(self.judge_failures())
        parts = ([counted(calls, "failed call")] if calls else []) + \
            ([f"{counted(judged, 'judge failure')} (unclassified, out of every share)"] if judged else [])
        return "; " + ", ".join(parts) if parts else ""

    def final_turn(self) -> dict[str, Any]:
        return self.turns[max(self.turns)]

    def stop_reason(self) -> StopReason:
        """Why a finished audit ended: the auditor's choice, ``max_iterations`` reached, or (auto) the
        run's target draws spent before it."""
        if not self.final_turn().get("final_requested"):
            return "auditor"
        return "max_draws" if self.draws_left() <= 0 and len(self.responses) < self.plan.max_iterations \
            else "max_iterations"

    def outcome(self) -> str:
        """How the audit ended, in words for the terminal; failed calls (the resume's to redo) and
        missing judgments (out of every share) follow in :meth:`failure_counts`."""
        return f"success ({self.stop_reason()})"

    def call_errors(self) -> list[dict[str, Any]]:
        """Target samples and judge calls that failed after their retries, as the files record them.

        A failed call has an error and no usage; a reply that came back but did not parse has
        usage (it was paid for, and asking again would get the same cached reply), so it is not one.
        """
        errors = []
        for k, response in sorted(self.responses.items()):
            for call, record in _iteration_calls(response):
                if _failed_call(record):
                    errors.append({"iteration": k, "call": call, "error": record["error"]})
        for name, recall in (("fact scoring", self.fact_recall), ("baseline fact scoring",
                                                                  self.baseline_fact_recall)):
            if _failed_call(recall):
                errors.append({"iteration": None, "call": name, "error": recall["error"]})
        return errors

    def judge_failures(self) -> list[dict[str, Any]]:
        """Judgments the run lacks: a response the judge was asked to label and did not (a failed
        call, a refusal, an unparsable reply: the response stays ``unclassified``), and a fact
        scoring without verdicts. They leave every share's denominator, so they are counted apart."""
        failures = []
        for k, response in sorted(self.responses.items()):
            for call, record in _iteration_calls(response):
                if call.endswith("judge") and record is not None and record.get("label") is None:
                    failures.append({"iteration": k, "call": call, "error": record.get("error")})
        for name, recall in (("fact scoring", self.fact_recall), ("baseline fact scoring",
                                                                  self.baseline_fact_recall)):
            if recall is not None and recall.get("error") is not None:
                failures.append({"iteration": None, "call": name, "error": recall["error"]})
        return failures

    async def redo_failed_calls(self) -> None:
        """On a resume, sample again every iteration with a failed call (its good calls come from the
        cache, free) and check later turns' citations again; fact scoring is redone at the end anyway.
        Later auditor turns keep what they were told (the redone response records ``redone_after``)."""
        failed: dict[int, list[str]] = {}
        for error in self.call_errors():
            if error["iteration"] is not None:
                failed.setdefault(error["iteration"], []).append(error["error"])
        for k, previous in sorted(failed.items()):
            await self.sample(k)
            self.responses[k]["redone_after"] = previous
            self.run_dir.write_response(k, self.responses[k])
            self.recheck_citations(after=k)

    def recheck_citations(self, *, after: int) -> None:
        """Check again the citations of the turns written after response ``after`` was redone:
        a quote of the missing response was marked unverified, and now can be checked. Each turn
        is checked against the responses it could have seen, as when it was written."""
        for t in sorted(k for k in self.turns if k > after):
            turn = self.turns[t]
            own, auditor = self.quotable(before=t)
            turn["parsed"]["hypotheses"], turn["evidence"] = check_evidence(turn["parsed"]["hypotheses"], own, auditor)
            self.run_dir.write_turn(t, turn)

    def quotable(self, before: int | None = None) -> tuple[Responses, Responses]:
        """The texts evidence may quote (the target's own words) and the auditor's beside them, of
        the responses before iteration ``before`` (all when None): :func:`quotable`."""
        return quotable({k: r for k, r in self.responses.items() if before is None or k < before},
                        by_draw=self.plan.menu is not None)

    def _usage_records(self) -> list[dict[str, Any] | None]:
        records: list[dict[str, Any] | None] = []
        for turn in self.turns.values():
            records.append(turn.get("usage"))
        for failed in self.failed_turns:
            records.extend(attempt.get("usage") for attempt in failed["attempts"])
        for response in self.responses.values():
            records.extend(_response_usages(response))
        return records

    def write_failure_summary(self, status: Status, error: str, *, stop_reason: StopReason | None = None) -> None:
        """The summary of a run that did not finish, written whatever the disk allows: the full one,
        else a short one with the status, the error and the iterations on disk (``write_final_summary``
        says how; if nothing fits, its OS error names ``summary.json`` for the run's one line)."""
        short = CensorshipSummary(
            status=status, stop_reason=stop_reason, error=error, total_iterations=len(self.responses),
            started_at=self.started_at, finished_at=iso(utc_now()), resumes=self.resumes,
            repeat=int(self.cfg.get("repeat") or 0), note="short summary: the full one could not be written")
        write_final_summary(self.run_dir.summary_path, self.summary(status, error=error, stop_reason=stop_reason),
                            short)

    def write_summary(self, status: Status, *, error: str | None = None, stop_reason: StopReason | None = None) -> None:
        self.run_dir.write_summary(self.summary(status, error=error, stop_reason=stop_reason))

    def summary(self, status: Status, *, error: str | None = None,
                stop_reason: StopReason | None = None) -> CensorshipSummary:
        last = self.turns[max(self.turns)] if self.turns else None
        parsed = last["parsed"] if last else {}
        final_hypotheses = parsed.get("hypotheses", [])
        ledger = self.gateway.ledger.totals()
        call_errors = self.call_errors()
        draws = self.draws()
        return CensorshipSummary(
            status=status,
            stop_reason=stop_reason,
            error=error,
            started_at=self.started_at,
            finished_at=iso(utc_now()) if status is not Status.STARTED else None,
            resumes=self.resumes,
            repeat=int(self.cfg.get("repeat") or 0),
            # Call counts, tokens and cost are the ledger's (every session's calls, failed ones and
            # their retries included), so they equal usage.json; parse failures come from the files.
            usage=ledger,
            failed_calls=len(call_errors),
            config=OmegaConf.to_container(self.cfg, resolve=True),  # type: ignore[arg-type]
            total_iterations=len(self.responses),
            final_hypotheses=final_hypotheses,
            final_summary=parsed.get("final_summary"),
            technique=self.plan.technique,
            with_baseline=self.plan.with_baseline,
            totals={**self.totals.as_dict(), **ledger.as_dict()},
            evidence=citation_counts(final_hypotheses),
            classifications=label_counts(judgments(d for d in draws if not d.is_baseline)),
            draw_classifications=self.draw_classifications(),
            baseline_classifications=label_counts(judgments(d for d in draws if d.is_baseline))
            if self.plan.with_baseline else None,
            fact_recall=self.fact_recall,
            baseline_fact_recall=self.baseline_fact_recall,
            fact_scoring=self.fact_scoring(),
            hypothesis_history=self.ledger.history(),
            audited_errors=sum(d.error is not None for d in draws if not d.is_baseline),
            failed_turn=self.failed_turn,
            failed_turns=self.failed_turns,
            call_errors=call_errors,
            judge_failures=self.judge_failures(),
            probe_language=language_counts((r.get("probe_language") for r in self.responses.values()), self.language),
            repairs=[{"iteration": k, "repair": r} for k, t in sorted(self.turns.items()) for r in t.get("repairs") or []],
            judge_panel=self.judge_panel(),
            served=served_summary((d for r in self.responses.values() for d in saved_draws(r)),
                                  self.plan.target.provider),
        )

    def judge_panel(self) -> dict[str, Any] | None:
        """The panel's outcomes, member failures and agreement (None for a single judge or none)."""
        if self.plan.panel is None:
            return None
        draws = self.draws()
        found = (draws, self.fact_recall, self.baseline_fact_recall)
        return panel_summary(self.plan.panel, run_items(*found), run_judgments(*found), cells=cell_items(draws))

    def draws(self) -> list[Draw]:
        """Every target draw so far, typed, in order (a fixed technique's baseline a draw of its own)."""
        return run_draws((r for _, r in sorted(self.responses.items())), self.plan.technique)


def conversation_after(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The auditor conversation after ``turn``: its input without the re-asked pairs, plus its accepted reply.

    Failed replies and re-ask messages stay in the turn file but not in later context: the
    auditor does not need its own broken JSON again, and the context stays short.
    """
    messages = list(turn["input_messages"])
    dropped = 2 * len(turn.get("attempts") or [])
    kept = messages[: len(messages) - dropped]
    return [*kept, {"role": "assistant", "content": turn["raw_response"]}]


def _failed_call(record: Mapping[str, Any] | None) -> bool:
    return bool(record) and record.get("error") is not None and record.get("usage") is None


def _iteration_calls(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    """The calls behind one saved iteration, named: each target draw (an auto action's by id, a fixed
    technique's response and its baseline) and its judge label."""
    calls: list[tuple[str, Mapping[str, Any] | None]] = []
    for draw in iteration_draws(record):
        name = f"draw {draw.id}" if draw.auto else "baseline" if draw.is_baseline else ""
        saved = draw.model_dump(exclude_unset=True)
        calls += [(name or "target", saved), (f"{name} judge".strip(), saved.get("classification"))]
    return calls


def _response_usages(record: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    return [usage for call, r in _iteration_calls(record) for usage in [(r or {}).get("usage")]]


def say(line: str) -> None:
    """Progress goes to stdout (spec), flushed so a piped or killed run still shows it."""
    print(line, file=sys.stdout, flush=True)
