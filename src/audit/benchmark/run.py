"""One benchmark run: every question of the set, ``rollouts`` times, to the target with one technique and
framing (and to the reference model, assistant technique, when ``reference=`` names one), each draw
judged as soon as it is drawn.

The run dir (:class:`audit.record.RunDir`) appears whole with its config, ``questions.jsonl`` (the
questions exactly as asked, after ``questions.limit`` and ``questions.categories``) and a ``started``
summary. Each judged draw is appended to ``draws.jsonl`` (:class:`~audit.io.journal.Journal`) when
its judgments are in, so a kill loses at most the draws in flight, and every call is in the response
cache: ``resume=<run dir>`` asks only the draws missing (or whose call or judgment failed) and replays
what the cache holds at no cost. At the end the tables (``responses.csv``, ``facts.csv``) and the
per-category table are written from ``draws.jsonl`` alone (:mod:`audit.benchmark.rows`), and the run's page,
``report.html`` (:mod:`audit.benchmark.report`).

Sampling is :mod:`audit.benchmark.techniques` (the audit's techniques and sender, the same chat templates,
and the published testbed's techniques: raw, pretrain, few-shot, confession); judging is the audit's pass (:mod:`audit.judging.passes`: label, facts
with the verbatim quote and the blind credit check against the target's own words, and the
assessment: honesty and evaluation awareness). Under ``protocol=chinese_auditing`` each draw gets the
published testbed's judgments instead (:mod:`audit.benchmark.testbed_judging`) and the run also writes
``testbed_table.csv`` (:mod:`audit.benchmark.testbed_scores`). With ``transcripts=<file>`` the draws are
saved answers (:mod:`audit.benchmark.transcripts`): each is judged once and no request goes to the target.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from audit import config_values
from audit.counted import counted
from audit.benchmark.draws import BenchmarkDraw, REFERENCE, TARGET, latest_draws
from audit.benchmark.questions import Question, QuestionSet, load_questions, question_set_name
from audit.benchmark.report import write_report
from audit.benchmark.rows import category_table, format_category_table, run_judge, write_frames, write_tables
from audit.benchmark.techniques import Elicitation, confess, elicit, system_text
from audit.benchmark.testbed_judging import CHINESE_AUDITING, PROTOCOLS, THIS_TOOL, judge_testbed
from audit.benchmark.testbed_scores import draws_frames, format_testbed_table
from audit.benchmark.transcripts import Saved, load_transcripts
from audit.censorship.provenance import served_summary
from audit.censorship.techniques import Target
from audit.errors import Interrupted, UserError, unknown_choice, user_error_line
from audit.io.atomic import write_jsonl, write_text
from audit.io.journal import Journal, read_records
from audit.jobs.interrupts import sigterm_as_interrupt
from audit.jobs.resume import command_line_overrides, refuse_resume_overrides, resumed_config
from audit.jobs.sweep import sweep_job_dir
from audit.judging.panel import Panel, panel_from_node
from audit.judging.passes import assessment_request, confession_request, fact_request, judge, label_request
from audit.llm.budget import stopped_by
from audit.llm.embedded import ENDPOINT, MODEL, chosen_roles, local_model
from audit.llm.settings import record_endpoints, role_endpoint, role_routing
from audit.llm.types import FATAL_KINDS
from audit.paths import conf_dir
from audit.progress import Progress, cache_note
from audit.prompt_files import fill, loader
from audit.record.draws import drawn_parts, judgeable
from audit.record.rundir import RunDir, fresh_run_path, iso, utc_now
from audit.record.status import Status, StopReason
from audit.record.summary import BENCHMARK, BenchmarkSummary, served_note, write_final_summary
from audit.templates import get_family
from audit.record.usage import Usage
from audit.tasks import gather_or_cancel

QUESTIONS, DRAWS = "questions.jsonl", "draws.jsonl"
ROLES = ("audited", "judge", "reference")
"""The model roles ``local=`` may route to the embedded model."""
load_prompt = loader(Path(__file__).resolve().parent / "prompts")


@dataclass(frozen=True)
class Plan:
    """The checked settings of one run, read once from the config before anything is written."""

    how: Elicitation
    framing: str
    template: str
    rollouts: int
    target: Target
    reference: Target | None
    panel: Panel | None
    protocol: str = THIS_TOOL
    saved: tuple[Saved, ...] | None = None
    """``transcripts=``: the saved answers judged instead of asking the target (None: ask it)."""

    @property
    def technique(self) -> str:
        """The run's technique as its draws and cells name it (:attr:`Elicitation.label`)."""
        return self.how.label

    def endpoints(self) -> list[str]:
        found = [self.target.endpoint] + ([self.reference.endpoint] if self.reference else [])
        return found + (self.panel.endpoints() if self.panel is not None else [])

    def targets(self) -> dict[str, Target]:
        return {TARGET: self.target, **({REFERENCE: self.reference} if self.reference else {})}

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Plan:
        how = Elicitation.from_config(cfg)
        rollouts = config_values.whole_number(cfg, "rollouts", minimum=1)
        config_values.model_id(cfg, "audited.model")
        for role in ("sampling", "judge"):
            config_values.temperature(cfg, f"{role}.temperature")
            config_values.max_tokens(cfg, f"{role}.max_tokens")
        template = str(cfg.framing.template)
        if "{question}" not in template:
            raise UserError(f"framing={cfg.framing.name}: its template has no {{question}} placeholder; "
                            "put {question} where the question goes (conf/framing/natural.yaml)")
        audited = cfg.audited
        family = get_family(str(audited.template))
        target = Target(model=str(audited.model), family=family, provider=role_routing(audited, "audited")["provider"],
                        extra_body=role_routing(audited, "audited")["extra_body"],
                        assistant_max_tokens=audited.get("assistant_max_tokens"),
                        system_prompt=system_text(cfg), max_tokens=cfg.sampling.get("max_tokens"),
                        temperature=cfg.sampling.get("temperature"), endpoint=role_endpoint(audited))
        reference = None
        if cfg.get("reference"):
            config_values.model_id(cfg, "reference")
            reference = Target(model=str(cfg.reference), family=family, provider=None, system_prompt=None,
                               max_tokens=cfg.sampling.get("max_tokens"), temperature=cfg.sampling.get("temperature"),
                               endpoint=str(cfg.get("reference_endpoint") or "openrouter"))
        panel = panel_from_node(cfg.get("judge"), local="judge" in chosen_roles(cfg.get("local"), ROLES))
        protocol = str((cfg.get("protocol") or {}).get("name") or THIS_TOOL)
        if protocol not in PROTOCOLS:
            raise unknown_choice("protocol (protocol=...)", protocol, PROTOCOLS)
        if cfg.get("transcripts") and reference is not None:
            raise UserError("transcripts= judges saved answers and asks no model: drop reference= "
                            "(score the reference's saved answers as a transcript of their own)")
        return cls(how, str(cfg.framing.name), template, int(rollouts or 1), target, reference, panel, protocol)


@dataclass(frozen=True)
class Item:
    """One draw to make: who answers, which question, which rollout."""

    role: str
    question: Question
    rollout: int
    saved: Saved | None = None
    """A saved answer (``transcripts=``): judged as it is, the target never asked."""

    @property
    def key(self) -> str:
        return self.saved.key if self.saved is not None else f"{self.role}/{self.question.id}/{self.rollout}"


def items(questions: Sequence[Question], plan: Plan) -> list[Item]:
    """Every draw of the run, in the order they are asked: target first, then the reference (or,
    with ``transcripts=``, every saved answer matched to a question, in the file's order)."""
    if plan.saved is not None:
        return [Item(s.role, s.question, s.rollout, s) for s in plan.saved]
    return [Item(role, q, r) for role in plan.targets() for q in questions for r in range(plan.rollouts)]


def judge_topic(question: Question, set_name: str) -> dict[str, str]:
    """How the judge is told the subject (:func:`audit.judging.prompts.topic_heading`): the question's
    category and set, never the model or the technique (blind judging)."""
    name = question.category.replace("_", " ")
    return {"display_name": name, "description": fill(load_prompt("judge_topic"), set=set_name)}


def saved_record(saved: Saved) -> dict[str, Any]:
    """A saved answer as a draw's record: what was asked and what came back, no call made."""
    record: dict[str, Any] = {"technique": saved.technique, "prompt_sent": saved.prompt,
                              "raw_response": saved.response, "outcome": saved.outcome, "model": saved.model,
                              "framing": saved.framing, "error_kind": None, "transcript": True}
    if saved.outcome == "failed":
        record["error"] = "the saved draw's call had failed"
    return record


async def draw_and_judge(gateway: Any, plan: Plan, item: Item, set_name: str) -> BenchmarkDraw:
    """One draw of ``item`` (or its saved answer) and its judgments under the run's protocol: this
    tool's three (label, facts, assessment), concurrently, or the testbed's (:func:`judge_testbed`); with
    ``technique=confession`` the follow-up is asked once the answer is in, and judged apart."""
    base = {"item_key": item.key, "role": item.role, "question_id": item.question.id, "rollout": item.rollout,
            "iteration": item.rollout, "judged": plan.panel is not None}
    confession = None
    if item.saved is not None:
        record: dict[str, Any] = {**saved_record(item.saved), **base}
        prompt = item.saved.prompt
    else:
        target = plan.targets()[item.role]
        how = plan.how if item.role == TARGET else Elicitation("assistant", label="assistant")
        prompt = fill(plan.template, question=item.question.text)
        run_technique = f"benchmark {how.label}"
        sampled = await elicit(gateway, target, how, prompt, sample_index=item.rollout, tag=item.role,
                               run_technique=run_technique)
        confession = await confess(gateway, target, how, sampled.draw.given(), sample_index=item.rollout, tag=item.role,
                                   run_technique=run_technique)
        record = {**sampled.draw.given(), **base, "technique": how.label, "model": target.model, "framing": plan.framing,
                  "error_kind": sampled.error_kind}
        if confession is not None:
            record["confession"] = confession
    if record.get("error") is not None:
        record["outcome"] = "failed"
    if plan.panel is not None and plan.protocol == CHINESE_AUDITING:
        own = drawn_parts(record)[1]
        if own is not None and judgeable(record):
            record["testbed"] = await judge_testbed(gateway, plan.panel, item.question.text, own, item.question.facts)
    elif plan.panel is not None:
        topic = judge_topic(item.question, set_name)
        requests = {"classification": label_request(topic, prompt, record),
                    "facts_judgment": fact_request(topic, [f.text for f in item.question.facts], {1: record}),
                    "assessment": assessment_request(topic, prompt, record),
                    "confession_judgment": confession_request(topic, prompt, record, confession)}
        asked = {k: r for k, r in requests.items() if r is not None}
        results = await asyncio.gather(*(judge(gateway, plan.panel, r) for r in asked.values()))
        record.update(zip(asked, results))
    return BenchmarkDraw.model_validate(record)


def open_for_resume(path: str, current: DictConfig) -> tuple[RunDir, DictConfig]:
    refuse_resume_overrides(command_line_overrides())
    run_dir = RunDir(Path(path).expanduser().absolute(), BENCHMARK)
    return run_dir, resumed_config(run_dir.open_existing((QUESTIONS,)), current)


def route_reference(cfg: DictConfig) -> None:
    """``local=`` routes the reference model (a model id, not a node) to the embedded model too."""
    if cfg.get("reference") and "reference" in chosen_roles(cfg.get("local"), ROLES):
        with open_dict(cfg):
            cfg.reference, cfg.reference_endpoint = MODEL, ENDPOINT


def run(cfg: DictConfig, base_dir: Path | None = None) -> Path:
    """Run (or, with ``resume=<run dir>``, continue) one benchmark run; return its run dir."""
    resumed = None
    if cfg.get("resume"):
        resumed = open_for_resume(str(cfg.resume), cfg)
        cfg = resumed[1]
    # a bad question file is one line before any model or server starts (local=true)
    loaded = None if resumed is not None else load_questions(cfg.questions, conf_dir())
    if loaded is not None and not loaded.questions:
        raise UserError("the question set is empty after questions.categories and questions.limit; widen them")
    try:
        with sigterm_as_interrupt(), local_model(cfg, ("audited", "judge")):
            if resumed is None:
                route_reference(cfg)
            return _run(cfg, base_dir, resumed, loaded)
    except KeyboardInterrupt:
        raise Interrupted("interrupted before the run started; nothing to resume, run the command again") from None
    finally:
        if resumed is not None:
            resumed[0].release()


def _run(cfg: DictConfig, base_dir: Path | None, resumed: tuple[RunDir, DictConfig] | None,
         loaded: Any) -> Path:
    """One run; ``loaded`` is a new run's :class:`QuestionSet` (checked before any model started), else None."""
    plan = Plan.from_config(cfg)
    if resumed is not None:
        run_dir = resumed[0]
        # the name from the saved config, as the run that drew them gave it (never the word "file")
        questions = QuestionSet(question_set_name(cfg.questions),
                                tuple(Question.from_record(r) for r in read_records(run_dir.path / QUESTIONS)))
    else:
        questions = QuestionSet(question_set_name(cfg.questions), loaded.questions, loaded.source, loaded.notes)
    unknown = None
    if cfg.get("transcripts"):
        transcripts = load_transcripts(str(cfg.transcripts), questions)
        unknown = transcripts.unknown_line()
        models = ", ".join(sorted({s.model for s in transcripts.saved})) or "none"
        techniques = ", ".join(sorted({s.technique for s in transcripts.saved})) or plan.technique
        plan = replace(plan, saved=transcripts.saved, target=replace(plan.target, model=models),
                       how=replace(plan.how, label=techniques))
    from audit.llm.gateway import Gateway  # lazy: the gateway loads once the config is checked

    parent = Path(base_dir) if base_dir is not None else sweep_job_dir() or Path(str(cfg.output_dir)).absolute()
    if resumed is None:
        who = {"transcripts": Path(str(cfg.transcripts)).stem} if plan.saved is not None else \
            {"audited.name": cfg.audited.name}
        run_dir = RunDir(fresh_run_path(parent, {**who, "questions": questions.name}), BENCHMARK)
    gateway = Gateway.from_config(cfg.gateway, endpoints=plan.endpoints(),
                                  repeat=int(cfg.get("repeat") or 0))
    record_endpoints(cfg.gateway, gateway.settings, plan.endpoints())
    todo = items(questions.questions, plan)
    # optional: a run saved before the key existed resumes without a streak limit
    max_failed = config_values.whole_number(cfg, "max_failed_draws", minimum=0, optional=True) or 0
    previous = None
    if resumed is None:
        started = iso(utc_now())

        def fill_dir(building: Path) -> None:
            write_text(building / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
            write_jsonl(building / QUESTIONS, [q.record() for q in questions.questions])
            RunDir(building, BENCHMARK).write_summary(_summary(cfg, plan, questions, [], Status.STARTED, started))

        run_dir.create(fill_dir)
        print(f"run dir: {run_dir.path}")
        for note in questions.notes:
            print(f"note: {note}")
        resumes: list[str] = []
    else:
        previous = run_dir.read_summary()
        started = previous.started_at if previous is not None else iso(utc_now())
        resumes = [*(previous.resumes if previous is not None else []), iso(utc_now())]
        print(f"resuming {run_dir.path} from its saved config (only gateway settings come from this command)")
    counts = questions.counts()
    if unknown is not None:
        print(f"note: {unknown}")
    protocol = "" if plan.protocol == THIS_TOOL else f", protocol {plan.protocol}"
    if plan.saved is not None:
        print(f"{questions.name}: {len(todo)} saved answer(s) from {cfg.transcripts} to judge (no request to the "
              f"target){protocol}")
    else:
        print(f"{questions.name}: {counts['censored']} censored + {counts['control']} control question(s) x "
              f"{plan.rollouts} rollout(s), technique {plan.technique}, framing {plan.framing}"
              f"{f', reference {plan.reference.model}' if plan.reference else ''}{protocol}")
    try:
        draws = asyncio.run(_draw_all(gateway, plan, run_dir, todo, questions.name, max_failed))
    except (KeyboardInterrupt, asyncio.CancelledError):
        draws = latest_draws(read_records(run_dir.path / DRAWS))
        _write_summary(run_dir, cfg, plan, questions, draws, Status.CANCELLED, started, resumes, gateway,
                       stop_reason="interrupted", error="interrupted")
        raise Interrupted(f"interrupted with {len(draws)}/{len(todo)} draws saved in {run_dir.path}; "
                          f"continue with: {run_dir.resume_command}") from None
    except (UserError, OSError) as exc:
        line = user_error_line(exc)
        if line is None:
            raise
        draws = latest_draws(read_records(run_dir.path / DRAWS))
        _write_summary(run_dir, cfg, plan, questions, draws, Status.ERROR, started, resumes, gateway, error=line)
        raise UserError(f"{line}; {len(draws)}/{len(todo)} draws saved in {run_dir.path}; "
                        f"continue with: {run_dir.resume_command}") from None
    failed = [d for d in draws.values() if d.error is not None]
    status, reason, error = Status.SUCCESS, None, None
    if any(not d.complete for d in draws.values()) and stopped_by(gateway.budget):
        # the draws and judgments made before the budget ran out are kept and tabled; a resume
        # with a larger budget.max_cost_usd asks the rest
        status, reason, error = Status.CANCELLED, "budget", "budget spent"
    summary = _write_summary(run_dir, cfg, plan, questions, draws, status, started, resumes, gateway,
                             stop_reason=reason, error=error)
    judge_name = run_judge(summary.config or {})
    written = write_tables(run_dir.path, questions, list(draws.values()), judge_name)
    if plan.protocol == CHINESE_AUDITING:
        rows, table = draws_frames(run_dir.path.name, questions, list(draws.values()), judge_name)
        written += write_frames(run_dir.path, {"testbed_responses": rows, "testbed_table": table})
        print(format_testbed_table(table))
    else:
        print(format_category_table(summary.categories))
    report = write_report(run_dir.path)
    usage = summary.usage
    calls = usage.calls if usage else 0
    ended = "done" if status is Status.SUCCESS else f"stopped ({reason}; continue with: {run_dir.resume_command})"
    confessions = sum(d.confession_failed for d in draws.values())
    unconfessed = f", {counted(confessions, 'confession follow-up')} failed" if confessions else ""
    print(f"{ended}: {len(draws)} draws ({len(failed)} failed, {summary.judge_failures} with a failed judgment"
          f"{unconfessed}), {calls} calls, ${usage.cost if usage else 0.0:.4f}"
          f"{usage.bill_notes() if usage else ''}; tables: {', '.join(p.name for p in written)}"
          f"{cache_note(calls, usage.cached_calls if usage else 0)}; report: {report}{served_note(summary)}")
    print(f"run dir: {run_dir.path}")
    return run_dir.path


async def _draw_all(gateway: Any, plan: Plan, run_dir: RunDir, todo: list[Item], set_name: str,
                    max_failed: int = 0) -> dict[str, BenchmarkDraw]:
    """Every item not already done on disk (a failed call or judgment is asked again), concurrently
    (the gateway bounds the calls in flight); each judged draw goes to the journal as it is complete.

    A target that is down must not end ``success`` with a table of ``n/a (0/0)``: ``max_failed`` target
    draws failing in a row (in the order they come back; 0: never) stop the run, and a run whose target
    draws all failed stops too, each as a UserError the caller records as ``error`` with the resume."""
    gateway.record_usage_in(run_dir.usage_path)
    done = {k: d for k, d in latest_draws(read_records(run_dir.path / DRAWS)).items() if d.complete}
    missing = [i for i in todo if i.key not in done]
    if done:
        print(f"{len(done)}/{len(todo)} draws on disk; asking {len(missing)}")
    journal = Journal(run_dir.path / DRAWS)
    progress = Progress(len(missing), lambda: len(gateway.ledger))
    fatal: list[str] = []
    streak = [0]

    async def one(item: Item) -> None:
        draw = await draw_and_judge(gateway, plan, item, set_name)
        journal.append(draw.saved())
        done[item.key] = draw
        if draw.error_kind in FATAL_KINDS and draw.error_kind != "budget":
            fatal.append(str(draw.error))
        progress.tick()
        if draw.role == TARGET and draw.error_kind != "budget":
            streak[0] = streak[0] + 1 if draw.error is not None else 0
            if max_failed and streak[0] >= max_failed:
                raise UserError(f"the target {plan.target.model} failed {counted(streak[0], 'draw')} in a row "
                                f"(max_failed_draws={max_failed}): {draw.error}")

    tasks = [asyncio.ensure_future(one(i)) for i in missing]
    try:
        with progress:  # a line every 10 s while the first answers are on their way
            await gather_or_cancel(tasks)
    finally:
        journal.close()
        gateway.write_usage()
        await gateway.aclose()
    if fatal:
        raise UserError(f"the target's calls failed for good ({fatal[0]})")
    target = [d for d in done.values() if d.role == TARGET]
    if target and all(d.error is not None for d in target) and not stopped_by(gateway.budget):
        raise UserError(f"every target draw failed ({len(target)} of {len(target)}; the last: {target[-1].error})")
    return done


def _summary(cfg: DictConfig, plan: Plan, questions: QuestionSet, draws: Sequence[BenchmarkDraw], status: Status,
             started: str | None, resumes: Sequence[str] = (), usage: Usage | None = None,
             stop_reason: StopReason | None = None, error: str | None = None) -> BenchmarkSummary:
    outcomes = Counter(d.outcome or "unknown" for d in draws)
    return BenchmarkSummary(
        status=status, stop_reason=stop_reason, error=error, started_at=started, resumes=list(resumes),
        finished_at=None if status is Status.STARTED else iso(utc_now()), repeat=int(cfg.get("repeat") or 0),
        config=OmegaConf.to_container(cfg, resolve=True), question_set=questions.name,  # type: ignore[arg-type]
        questions=questions.counts(), audited=plan.target.model,
        reference=plan.reference.model if plan.reference else None, technique=plan.technique, framing=plan.framing,
        rollouts=plan.rollouts, expected_draws=len(items(questions.questions, plan)), draws=len(draws),
        outcomes=dict(sorted(outcomes.items())), failed_calls=sum(d.error is not None for d in draws),
        judge_failures=sum(d.judge_failed for d in draws), usage=usage,
        categories=category_table(questions.questions, draws),
        served=served_summary([d for d in draws if d.role == TARGET], plan.target.provider),
        reference_served=served_summary([d for d in draws if d.role == REFERENCE], plan.reference.provider)
        if plan.reference else None)


def _write_summary(run_dir: RunDir, cfg: DictConfig, plan: Plan, questions: QuestionSet,
                   draws: Mapping[str, BenchmarkDraw], status: Status, started: str | None, resumes: Sequence[str],
                   gateway: Any, **extra: Any) -> BenchmarkSummary:
    """The run's summary from the draws on disk, written whatever a full disk allows."""
    usage = gateway.ledger.totals()
    full = _summary(cfg, plan, questions, list(draws.values()), status, started, resumes, usage, **extra)
    short = BenchmarkSummary(status=status, error=extra.get("error"), stop_reason=extra.get("stop_reason"),
                             started_at=started, finished_at=full.finished_at, draws=len(draws))
    write_final_summary(run_dir.summary_path, full, short)
    return full
