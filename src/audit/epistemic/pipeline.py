"""The experiment as stages, each writing its output into the run directory:

``cards`` → cards.jsonl, ``systems`` → results.jsonl (+ usage.json when a model was
called), ``metrics`` → metrics.json (keyed by system), ``report`` → report.html.

``stage=all`` (default) runs them in order. ``stage=cards`` stops after the cards;
``stage=systems`` stops after the results (cards generated, or reused with
``cards.path=...``). ``stage=metrics`` and ``stage=report`` start from existing results
files (``results=<path>`` or ``results=[a,b]``, any of them in the original project's
format) and never load a graph, so they are instant and reusable on old runs.

Every stage writes into a fresh run directory and never touches its inputs. Everything
that can fail on bad input (unknown system, missing model or API key, malformed cards)
is checked before the directory is created, so a failed run leaves nothing half-written.

Interrupts and kills: the run dir (:class:`audit.record.RunDir`) appears whole with its config,
each system as it runs (``systems.json``, :mod:`audit.epistemic.used_systems`), cards and a
``started`` summary, and is locked while a process runs it. Each answer is appended to
``answers.jsonl`` as it arrives, so Ctrl-C or SIGTERM (summary ``cancelled``) and even
SIGKILL lose at most the calls in flight; ``resume=<run dir>`` continues in the same
directory, asking only the cards without an answer (and those whose call failed),
whatever the response cache holds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.counted import counted
from audit import config_values
from audit.epistemic import systems
from audit.epistemic.jsonl import read_jsonl
from audit.epistemic.metrics import PREDS, check_mapping, compute_metrics, units
from audit.epistemic.rates import HEADLINE_RATES
from audit.epistemic.report import write_report
from audit.epistemic.systems.base import Reply, System
from audit.record.answers import Card, Metrics
from audit.epistemic.systems.llm import check_fields, load_prompt, with_prompts
from audit.config_values import as_list
from audit.epistemic.system_nodes import system_names, system_node
from audit.epistemic.used_systems import RECORD, changed_since, used_systems
from audit.errors import Interrupted, UserError, unknown_choice, user_error_line
from audit.jobs.interrupts import sigterm_as_interrupt
from audit.io.atomic import write_json, write_jsonl, write_text
from audit.io.journal import Journal, read_records
from audit.io.names import path_component
from audit.jobs.resume import command_line_overrides, read_saved, refuse_resume_overrides, resumed_config
from audit.llm import aborted
from audit.llm.budget import stopped_by
from audit.llm.embedded import chosen_roles, local_model, route
from audit.llm.settings import GatewaySettings, record_endpoints, role_endpoint
from audit.llm.workers import WorkerGateway, worker_count
from audit.progress import Progress, cache_note
from audit.tasks import gather_or_cancel
from audit.record.rundir import RunDir, fresh_run_path, iso, utc_now
from audit.record.status import Status, StopReason
from audit.record.summary import EPISTEMIC, EpistemicSummary, write_final_summary
from audit.runtime import long_lived_heap
from audit.record.usage import Usage

STAGES = ("all", "cards", "systems", "metrics", "report")
ANSWERS = "answers.jsonl"
"""The answers journal: one results row per line, appended as each card is answered."""


# -- inputs ----------------------------------------------------------------------------

def read_results(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Rows of one or more results files; a card answered twice by one system is an error
    (two runs of the same system would otherwise be silently pooled)."""
    fix = "pass results.jsonl files written by stage=systems (or the original format: id, gold, pred, system)"
    rows, seen = [], {}
    for path in paths:
        for n, row in read_jsonl(path, "results", fix):
            for key in ("id", "gold", "system"):
                if key not in row:
                    raise UserError(f"{path.name} line {n}: missing {key!r}; {fix}")
            if row["gold"] not in PREDS or not (row.get("pred") in (None, *PREDS) or row.get("error") is not None):
                # A pred outside YES/NO/UNKNOWN with no error recorded is not a failed call but a bad
                # file: scoring it as an error would turn a typo into "every rate n/a", exit 0.
                bad = "gold" if row["gold"] not in PREDS else "pred"
                raise UserError(f"{path.name} line {n}: {bad} {row[bad]!r} is not YES, NO or UNKNOWN"
                                f"{' (or null for a failed call)' if bad == 'pred' else ''}; {fix}")
            key = (row["system"], row["id"])
            if key in seen:
                raise UserError(
                    f"system {row['system']!r} answers card {row['id']!r} twice ({seen[key]} and {path}); "
                    "give each run a distinct system.label"
                )
            seen[key] = path
            rows.append(row)
    if not rows:
        raise UserError(f"no result rows in {', '.join(map(str, paths))}; {fix}")
    return rows


def cards_for_report(cfg: DictConfig, results_paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Card texts for the drill-down: ``cards.path`` if given, else a cards.jsonl beside each
    results file. Lenient on purpose (only ``id`` is needed), so original cards files work."""
    fix = "give cards.path=<cards.jsonl> or leave it unset"
    paths = [Path(cfg.cards.path)] if cfg.cards.get("path") else [
        p.parent / "cards.jsonl" for p in results_paths if (p.parent / "cards.jsonl").is_file()]
    return {str(c["id"]): c for p in dict.fromkeys(paths) for _, c in read_jsonl(p, "cards", fix) if "id" in c}


def selected_system_cfgs(cfg: DictConfig) -> list[DictConfig]:
    """The systems to run: the ``systems`` list if given, else the ``system`` group choice.

    In list mode each system uses its conf/system/<name>.yaml, except the one that is also
    the ``system`` group choice, which keeps its command-line overrides (system.model=...);
    ``per_system.<name>`` settings (``+per_system.rag.endpoint=local``) apply to the one named,
    so every listed system can have its own endpoint or model.
    """
    names = system_names(cfg)
    settings = cfg.get("per_system") or {}
    for name in settings:
        if name not in names:
            raise UserError(f"per_system.{name}: {name} is not a system of this run ({', '.join(names)}); "
                            f"add it to systems=[...] or fix the name")
    out = []
    for name in names:
        systems.get(name)  # unknown → UserError with the available systems
        node = system_node(cfg, name)
        missing = sorted(key.removeprefix("system.") for key in OmegaConf.missing_keys(node))
        if missing:
            needed = " ".join(f"system.{key}=<{'OpenRouter model id' if key == 'model' else 'value'}>" for key in missing)
            raise UserError(f"system={name} needs a value for {', '.join(missing)}: add {needed}")
        check_system_values(node)
        node = with_prompts(node, cfg.get("prompt"))
        if systems.get(name).NEEDS_LLM:
            load_prompt(str(node.prompt.system))  # a missing prompt file fails before the run dir exists
            check_fields(load_prompt(str(node.prompt.user)), str(node.prompt.user), systems.get(name).FIELDS)
        out.append(node)
    return out


def check_system_values(node: DictConfig) -> None:
    """The numbers an LLM system sends (temperature, max_tokens, top_k), checked before any call."""
    wrapped = {"system": node}
    if systems.get(str(node.name)).NEEDS_LLM:
        config_values.model_id(wrapped, "system.model")
        config_values.temperature(wrapped, "system.temperature")
        config_values.max_tokens(wrapped, "system.max_tokens")
    if "top_k" in node:
        config_values.whole_number(wrapped, "system.top_k", minimum=1)


# -- outputs ---------------------------------------------------------------------------

def answered(row: Mapping[str, Any]) -> bool:
    """Whether a results row is an answer a resume keeps: not a call that failed (no reply at all)."""
    return row.get("error") is None or row.get("raw_output") is not None


def saved_answers(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The answers a run dir holds, by (system, card id): its results file, then its answers journal."""
    rows = read_records(run_dir / "results.jsonl") + read_records(run_dir / ANSWERS)
    return {(str(r["system"]), str(r["id"])): r for r in rows if "system" in r and "id" in r and answered(r)}


def result_row(card: Card, system_id: str, reply: Reply) -> dict[str, Any]:
    """The original's row (id, gold, pred, pass, system, label) plus suite, raw output,
    reason, error and the system's extras (read back as :class:`audit.record.answers.Answer`)."""
    return {
        "id": card.id, "gold": card.gold, "pred": reply.pred, "pass": reply.pred == card.gold,
        "system": system_id, "label": card.label, "suite": card.suite, "u_kind": card.u_kind,
        "condition": card.condition, "prior_label": card.prior_label,
        "raw_output": reply.raw_output, "reason": reply.reason, "error": reply.error, **reply.extra,
    }


def answers_status(rows: Sequence[Mapping[str, Any]]) -> tuple[Status, dict[str, list[int]]]:
    """``success`` (some answers may be errors: the summary counts them as failed calls) or
    ``error`` when more than half of some system's answers are errors (its rates describe the
    failures, not the system; stop reason ``mostly_errors``), with each system's [errors, answers]."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        entry = counts.setdefault(str(row["system"]), [0, 0])
        entry[0] += row.get("error") is not None
        entry[1] += 1
    return (Status.ERROR if any(2 * errors > total for errors, total in counts.values()) else Status.SUCCESS), counts


def headline(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Per system (per system and condition when it was asked several: :func:`units`): rows, errors
    and the headline rates (values only), for summaries and the end line."""
    return {
        unit: {"n_rows": m.n_rows, "n_errors": m.n_errors,
               **{k: (None if (r := m.rate(k)) is None else round(r["value"], 4)) for k in HEADLINE_RATES}}
        for unit, m in units(Metrics.read(metrics)).items()
    }


def print_headline(metrics: Mapping[str, Any]) -> None:
    for system, h in headline(metrics).items():
        rates = "  ".join(f"{k}={'n/a' if h[k] is None else format(h[k], '.3f')}" for k in HEADLINE_RATES)
        print(f"{system}: {counted(h['n_rows'], 'card')}, {counted(h['n_errors'], 'error')}  {rates}")


def write_metrics_and_report(run_dir: Path, rows: list[dict[str, Any]], mapping: str,
                             cards: Mapping[str, Mapping[str, Any]], meta: dict[str, Any], stage: str) -> dict[str, Any]:
    metrics = compute_metrics(rows, mapping)
    write_json(run_dir / "metrics.json", metrics)
    if stage in ("all", "report"):
        write_report(run_dir / "report.html", metrics, rows, cards, meta)
    print_headline(metrics)
    return metrics


def cost_line(record: Usage | Mapping[str, Any]) -> str:
    """What a run's model calls cost, for the terminal and the report (with the prompt cache's share)."""
    usage = Usage.of(record)
    return f"${usage.cost:.4f} over {usage.calls} calls ({usage.tokens:,} tokens){usage.bill_notes()}"


def cards_digest(cards: Sequence[Mapping[str, Any]]) -> str:
    """A short hash of the cards a run asked: runs with the same digest answered the same cards,
    so a comparison averages them card by card (:func:`audit.stats.card_rate`) instead of
    counting a repeated card as a new one."""
    text = json.dumps(list(cards), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_summary(target: RunDir, stage: str, status: Status, *, stop_reason: StopReason | None = None,
                  **extra: Any) -> None:
    """summary.json: what ran and its headline numbers (or the error), for sweep aggregation."""
    target.write_summary(summary_record(stage, status, stop_reason=stop_reason, **extra))


def summary_record(stage: str, status: Status, *, stop_reason: StopReason | None = None,
                   **extra: Any) -> EpistemicSummary:
    errors = extra.get("answer_errors") or {}
    return EpistemicSummary(
        status=status, stop_reason=stop_reason, stage=stage,
        finished_at=None if status is Status.STARTED else iso(utc_now()),
        failed_calls=sum(e for e, _ in errors.values()), **extra)


# -- the systems stage -----------------------------------------------------------------

def run_workers(cfg: DictConfig) -> int:
    """The processes that make the run's model calls (``workers``: a number, or ``auto``, one per core)."""
    return worker_count(cfg.get("workers", 1))


def open_gateway(gateway_cfg: DictConfig, endpoints: Sequence[str], repeat: int = 0, workers: int = 1) -> Any:
    """The model gateway, imported here so runs without LLM systems never load litellm.

    ``repeat`` (``samples=k``) enters the cache keys: each repeat answers every card afresh.
    litellm is imported once the gateway is built (keys checked), not at the first call: its
    ~3 s would otherwise count in the first tenth of the progress line and skew the ETA (and
    workers forked from this process then have it already).
    ``workers`` > 1 makes the calls in that many processes, each with the same gateway
    (:mod:`audit.llm.workers`); this process keeps the one ledger, budget and journal.
    """
    # lazy (start-up time): litellm loads with the gateway, as the docstring says
    from audit.llm import backend
    from audit.llm.gateway import Gateway

    def make() -> Gateway:
        return Gateway.from_config(gateway_cfg, endpoints=endpoints, repeat=repeat)

    gateway = make()
    backend.litellm()
    return gateway if workers == 1 else WorkerGateway(gateway, make, workers)


async def answer_cards(built: Sequence[System], cards: Sequence[Mapping[str, Any]], gateway: Any,
                       done: Mapping[tuple[str, str], dict[str, Any]] | None = None,
                       journal: Journal | None = None) -> list[dict[str, Any]]:
    """Every system on every card not already in ``done``, concurrently (the gateway bounds
    calls in flight); each new row goes to ``journal`` as it arrives. Returns all rows, ``done``
    ones included, in card order per system.

    With a model in the loop a run can take minutes, so a progress line (calls/s, ETA) over
    this session's cards is printed every 10% or 10 s; results.jsonl is written once, at the
    end, from memory (the journal is only read by a resume).
    """
    done = dict(done or {})
    typed = [Card.model_validate(c) for c in cards]
    pairs = [(s, c) for s in built for c in typed]
    todo = [(s, c) for s, c in pairs if (s.id, c.id) not in done]
    progress = Progress(len(todo), lambda: len(gateway.ledger)) if gateway is not None else None

    async def one(system: System, card: Card) -> None:
        row = result_row(card, system.id, await system.answer(card))
        done[(system.id, card.id)] = row
        if journal is not None:
            journal.append(row)
        if progress is not None:
            progress.tick()

    tasks = [asyncio.ensure_future(one(s, c)) for s, c in todo]
    try:
        # the graph is not rescanned by every collection the calls trigger; progress: a line every 10 s
        with long_lived_heap(), progress if progress is not None else nullcontext():
            # one answer that cannot be saved (a full disk) stops the run and the calls in flight
            await gather_or_cancel(tasks)
    finally:
        if journal is not None:
            journal.close()
        if gateway is not None:
            await gateway.aclose()
    return [done[(s.id, c.id)] for s, c in pairs]


# -- entry -----------------------------------------------------------------------------

def run(cfg: DictConfig, base_dir: Path | None = None) -> Path:
    """Run ``cfg.stage`` and return the run directory (under ``base_dir`` or ``cfg.output_dir``)."""
    resumed = None
    if cfg.get("resume"):  # the saved run's config decides everything below (stage, systems, local=)
        resumed = open_for_resume(str(cfg.resume), cfg)
        cfg = resumed[1]
    stage = str(cfg.get("stage", "all"))
    if stage not in STAGES:
        raise unknown_choice("stage", stage, STAGES)
    mapping = check_mapping(str(cfg.metrics.mapping))
    base = Path(base_dir if base_dir is not None else cfg.output_dir).absolute()  # the resume line works from anywhere
    if stage in ("metrics", "report"):
        return _run_from_results(cfg, stage, mapping, base)
    # local=true: the embedded model answers for every LLM system; with none (kg_oracle alone, or
    # stage=cards) nothing would call it, so it is not started.
    names = system_names(cfg)
    serve = stage != "cards" and any(systems.get(name).NEEDS_LLM for name in names)
    try:
        # SIGTERM acts as Ctrl-C
        with sigterm_as_interrupt(), local_model(cfg, ("system",), serve=serve):
            return _run_experiment(cfg, stage, mapping, base, resumed)
    except KeyboardInterrupt:  # before any card was asked (from then on, the run says how to resume)
        raise Interrupted("interrupted before any card was asked; nothing changed, run the command again") from None


def open_for_resume(path: str, current: DictConfig) -> tuple[RunDir, DictConfig]:
    """The run dir to continue, locked, and its saved config (gateway settings from this command)."""
    refuse_resume_overrides(command_line_overrides())
    run_dir = RunDir(Path(path).expanduser().absolute(), EPISTEMIC)
    return run_dir, resumed_config(run_dir.open_existing(("cards.jsonl",)), current)


def _run_from_results(cfg: DictConfig, stage: str, mapping: str, base: Path) -> Path:
    paths = [Path(p) for p in as_list(cfg.get("results"))]
    if not paths:
        raise UserError(f"stage={stage} needs results=<results.jsonl> (or results=[a.jsonl,b.jsonl])")
    rows = read_results(paths)
    cards = cards_for_report(cfg, paths) if stage == "report" else {}
    compute_metrics(rows, mapping)  # validate every row before the run directory exists
    run_dir = RunDir(fresh_run_path(base, {"stage": stage}), EPISTEMIC)
    run_dir.create(lambda building: write_text(building / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True)))
    try:
        meta = {"results": ", ".join(map(str, paths)), "rows": len(rows)}
        metrics = write_metrics_and_report(run_dir.path, rows, mapping, cards, meta, stage)
        write_summary(run_dir, stage, Status.SUCCESS, started_at=iso(utc_now()), repeat=int(cfg.get("repeat") or 0),
                      run_dir=str(run_dir.path), results=meta["results"], systems=headline(metrics))
    finally:
        run_dir.release()
    print(f"run dir: {run_dir.path}")
    return run_dir.path


def _run_experiment(cfg: DictConfig, stage: str, mapping: str, base: Path,
                    resumed: tuple[RunDir, DictConfig] | None) -> Path:
    """Cards, then the systems stage and what follows, in a new run dir or the ``resumed`` one
    (:func:`open_for_resume`)."""
    # lazy (start-up time): rdflib and pyshacl load when a run starts, not for --help
    from audit.epistemic.cards import generate_cards, held_out_drops, read_cards, shortfall, withhold
    from audit.epistemic.conditions import DEFAULT as DEFAULT_CONDITION, apply_conditions
    from audit.epistemic.domain import load_domain

    dropped: dict[str, int] = {}  # held-out candidates left out, per reason (generated cards only)
    workers = run_workers(cfg)
    cfg.workers = workers  # auto resolved: the saved config says how many processes this run used
    num_per_type = config_values.whole_number(cfg, "cards.num_per_type", minimum=1)
    seed = config_values.whole_number(cfg, "cards.seed", minimum=0)
    system_cfgs = selected_system_cfgs(cfg) if stage != "cards" else []
    if chosen_roles(cfg.get("local"), ("system",)):
        for node in system_cfgs:
            if systems.get(node.name).NEEDS_LLM:
                route(node)
    endpoints = [role_endpoint(c) for c in system_cfgs if systems.get(c.name).NEEDS_LLM]
    if endpoints:  # an unknown endpoint or a missing key: one line before the domain loads and the cards are drawn
        GatewaySettings.from_config(cfg.gateway).keys_for(endpoints)
    path_component(cfg.domain.name, "domain.name")  # before it is looked up: the name is a path too
    domain = load_domain(cfg.domain, cfg.predicate)
    if resumed is not None:
        cards = read_cards(resumed[0].path / "cards.jsonl")  # exactly the cards the run started with
    elif cfg.cards.get("path"):
        cards = read_cards(cfg.cards.path)
        foreign = sorted({Card.model_validate(c).claim_triple()[1] for c in cards} - {domain.predicate.iri})
        if foreign:  # the oracle would judge them against the wrong graph and call them all U
            raise UserError(f"{cfg.cards.path} asks about {foreign[0]}, not {domain.predicate.iri}; "
                            "pass the domain=... predicate=... the cards were generated for")
    else:
        cards = generate_cards(domain, num_per_type=num_per_type, seed=seed, suites=as_list(cfg.cards.suites),
                               dropped=dropped)
        for line in shortfall(cards, num_per_type, as_list(cfg.cards.suites)):
            print(f"note: {line}")
        for line in held_out_drops(dropped, domain.predicate.name):
            print(f"note: {line}")
        cards = apply_conditions(domain, cards, as_list(cfg.cards.get("conditions")) or [DEFAULT_CONDITION])
    withhold(domain, cards)  # held-out facts leave every system's view (again, for reused cards)
    name_parts = {"domain.name": domain.name, "predicate.name": domain.predicate.name}
    path_component(domain.predicate.name, "predicate.name")  # before any model call
    # Build systems (and the gateway, which checks the API key) before creating the run dir.
    gateway = open_gateway(cfg.gateway, endpoints, int(cfg.get("repeat") or 0), workers) if endpoints else None
    if gateway is not None:
        record_endpoints(cfg.gateway, gateway.settings, endpoints)
    built = [systems.get(c.name).create(c, domain=domain, gateway=gateway) for c in system_cfgs]
    ids = [s.id for s in built]
    if len(set(ids)) != len(ids):
        raise UserError(f"systems {ids} share a name; give one of them a distinct system.label")
    if resumed is not None and (resumed[0].path / RECORD).is_file():  # the rest of the cards as the first were
        check_unchanged(resumed[0].path / RECORD, used_systems(system_cfgs, ids))

    summary: dict[str, Any] = {"cards": len(cards), "domain": domain.name, "predicate": domain.predicate.name,
                               "repeat": int(cfg.get("repeat") or 0),  # the comparison keeps repeats apart
                               "cards_digest": cards_digest(cards)}  # ... and averages repeats of one card set
    if dropped:
        summary["held_out_dropped"] = dropped  # candidates that would have leaked their answer, per reason
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if resumed is not None:
        run_dir = resumed[0]
        done = saved_answers(run_dir.path)
        previous = run_dir.read_summary()
        if previous is not None and previous.status is not Status.STARTED and previous.stop_reason != "interrupted" \
                and len(done) == len(cards) * len(built) and outputs_written(run_dir.path, stage):
            raise UserError(f"resume: {run_dir.path} already finished (status {previous.status.value}); nothing to do")
        summary |= {"started_at": previous.started_at if previous else None,
                    "resumes": [*(previous.resumes if previous else []), iso(utc_now())]}
        print(f"resuming {run_dir.path}: {len(done)}/{len(cards) * len(built)} answers on disk "
              "(only gateway settings come from this command)")
        # This session's status from now on (an earlier session's error must not stand for it).
        write_summary(run_dir, stage, Status.STARTED, **summary, run_dir=str(run_dir.path), answered=len(done),
                      expected_answers=len(cards) * len(built))
    else:
        run_dir = RunDir(fresh_run_path(base, name_parts), EPISTEMIC)
        summary["started_at"] = iso(utc_now())

        def fill(building: Path) -> None:
            write_text(building / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
            if built:  # each system as it answers, and its prompts' text digests (audit.epistemic.used_systems)
                write_json(building / RECORD, used_systems(system_cfgs, ids))
            write_jsonl(building / "cards.jsonl", cards)
            write_summary(RunDir(building, EPISTEMIC), stage, Status.STARTED, **summary, run_dir=str(run_dir.path),
                          answered=0, expected_answers=len(cards) * len(built))  # the path it will have

        run_dir.create(fill)
        print(f"{len(cards)} cards ({domain.name}, {domain.predicate.name}) -> {run_dir.path / 'cards.jsonl'}")
    summary = {"run_dir": str(run_dir.path), **summary}
    try:
        return _answer_and_score(run_dir, cfg, stage, mapping, domain, cards, built, gateway, done, summary)
    except (KeyboardInterrupt, asyncio.CancelledError):
        got = len(saved_answers(run_dir.path))
        expected = len(cards) * len(built)
        fields = dict(summary)  # a signal after the scoring began finds the usage in it already
        if gateway is not None:
            gateway.write_usage()
            fields["usage"] = gateway.ledger.totals()
        write_summary(run_dir, stage, Status.CANCELLED, stop_reason="interrupted", error="interrupted", **fields,
                      answered=got, expected_answers=expected)
        raise Interrupted(f"interrupted with {got}/{expected} answers saved in {run_dir.path}; "
                          f"continue with: {run_dir.resume_command}") from None
    except (UserError, OSError) as exc:
        # A fatal 401/404 or a full disk: the summary must not stay "started" (compare would call
        # the run killed) nor keep an earlier session's status, but say error with the answers on
        # disk; or the line names the summary it could not write. A final status this session
        # already wrote (mostly_errors) is left as it is.
        line = user_error_line(exc)
        if line is None or isinstance(exc, SummaryWritten):
            raise
        got, expected = len(saved_answers(run_dir.path)), len(cards) * len(built)
        # A spent budget is a stop, not a failure: the sweep's tables count the run as cancelled
        # (stop reason budget) with its answers kept for a resume, as an audit's budget stop is.
        status, reason = (Status.CANCELLED, "budget") if stopped_by(gateway.budget if gateway else None) \
            else (Status.ERROR, None)
        kept = {k: summary[k] for k in ("cards", "domain", "predicate", "cards_digest", "repeat", "started_at",
                                        "resumes", "run_dir") if summary.get(k) is not None}
        short = EpistemicSummary(status=status, stop_reason=reason, stage=stage, error=line, answered=got,
                                 expected_answers=expected, finished_at=iso(utc_now()), **kept)  # a full disk may take it
        try:
            write_final_summary(run_dir.summary_path, summary_record(stage, status, stop_reason=reason, **summary,
                                                                     answered=got, expected_answers=expected,
                                                                     error=line), short)
        except OSError as unwritten:
            raise UserError(f"{line}; could not write {run_dir.summary_path} either ({unwritten.strerror}); "
                            f"{got}/{expected} answers are on disk in {run_dir.path}") from None
        raise UserError(f"{line}; {got}/{expected} answers saved in {run_dir.path}; "
                        f"continue with: {run_dir.resume_command}") from None
    finally:
        run_dir.release()


def check_unchanged(record: Path, now: Mapping[str, Any]) -> None:
    """Refuse a resume whose systems differ from those its run recorded when it started (one line
    naming the setting): the rest of the cards would be answered otherwise under the same run."""
    changed = changed_since(read_saved(record, "restore it, or start a new run"), now)
    if changed:
        raise UserError(f"resume: {changed} ({record}); restore it, or start a new run")


class SummaryWritten(UserError):
    """A run that ends in error after writing its final summary (``mostly_errors``): the summary
    already says why, so the error path leaves it as it is."""


def outputs_written(path: Path, stage: str) -> bool:
    """Whether a run's outputs are all on disk: a run whose disk filled after its last answer has
    every answer saved and an ``error`` summary, but no results, metrics or report until resumed."""
    names = ("results.jsonl", "metrics.json", "report.html") if stage == "all" else ("results.jsonl",)
    return all((path / name).is_file() for name in names)


def _answer_and_score(run_dir: RunDir, cfg: DictConfig, stage: str, mapping: str, domain: Any,
                      cards: list[dict[str, Any]], built: list[System], gateway: Any,
                      done: dict[tuple[str, str], dict[str, Any]], summary: dict[str, Any]) -> Path:
    """The systems stage and what follows it, in an existing (possibly resumed) run dir."""
    if gateway is not None:
        gateway.record_usage_in(run_dir.usage_path)  # every call on disk as it completes
    if stage != "cards":
        if isinstance(gateway, WorkerGateway):
            gateway.start()  # the workers are forked before the event loop runs
            print(f"calls made by {gateway.count} worker processes (workers={cfg.get('workers')})")
        rows = asyncio.run(answer_cards(built, cards, gateway, done, Journal(run_dir.path / ANSWERS)))
        write_jsonl(run_dir.path / "results.jsonl", rows)
        (run_dir.path / ANSWERS).unlink(missing_ok=True)  # every row is in results.jsonl now
        if gateway is not None:
            gateway.write_usage()
            summary["usage"] = gateway.ledger.totals()
            print(f"cost: {cost_line(summary['usage'])}")
        if stage == "all":
            meta = {"domain": domain.name, "predicate": f"{domain.predicate.name} ({domain.predicate.iri})",
                    "cards": len(cards), "provenance": domain.provenance,
                    "edges set aside by SHACL validation": len(domain.violations),
                    **({"cost": cost_line(summary["usage"])} if "usage" in summary else {})}
            metrics = write_metrics_and_report(run_dir.path, rows, mapping, {c["id"]: c for c in cards}, meta, stage)
            summary["systems"] = headline(metrics)
    status, errors = answers_status(rows) if stage != "cards" else (Status.SUCCESS, {})
    reason: StopReason | None = "mostly_errors" if status is Status.ERROR else None
    if errors and gateway is not None and stopped_by(gateway.budget):
        # the answers given before the budget ran out are kept and scored
        status, reason = Status.CANCELLED, "budget"
    mostly = None
    if reason == "mostly_errors":
        worst = max(errors, key=lambda name: errors[name][0] / errors[name][1])
        first = next(r["error"] for r in rows if r["system"] == worst and r.get("error") is not None)
        mostly = f"{worst}: {errors[worst][0]}/{errors[worst][1]} answers are errors (first: {first})"
    write_summary(run_dir, stage, status, stop_reason=reason, error=mostly, **summary,
                  **({"answer_errors": errors} if errors else {}))
    if stage == "all" and mostly is None:
        usage = Usage.of(summary.get("usage"))
        print(f"done: report: {run_dir.path / 'report.html'}"
              f"{cache_note(usage.calls, usage.cached_calls)}{aborted.note(usage)}")
    print(f"run dir: {run_dir.path}")
    if mostly is not None:
        raise SummaryWritten(f"{mostly}; status error (mostly_errors) in {run_dir.summary_path}; "
                             "fix the cause and run again")
    return run_dir.path
