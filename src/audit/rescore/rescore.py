"""Rescoring saved audit runs with another judge: the I/O side of ``python -m audit.rescore``.

For every audit run found under the given directories (read through :func:`audit.runs.loading.load_runs`,
the one reader of run dirs), the judge labels each saved response and baseline response and scores
the key facts, exactly as an audit's judge does (the same prompt files, blind to model and
technique, response schemas and parsers: :mod:`audit.judging.judge`, one call each through
:func:`audit.judging.call.call_judge`). Neither the auditor nor the target is called.

What a rescore writes goes in ``<run dir>/judgings/<name>/`` and nowhere else:

- ``judgments.jsonl``: one line per finished judge call, appended as it completes. A rescore that
  was killed continues from it (a failed call is asked again); the gateway's response cache
  answers repeated requests, and the ledger journal (``usage.jsonl``) keeps the cost of earlier sessions.
- ``judging.json``: the judge's settings, the labels per response beside the original ones, label
  counts, fact scores and failures. Not named ``summary.json``: the folder is not a run.
- ``usage.json``: the rescore's own cost ledger (the run's ``usage.json`` is untouched).
- ``agreement.csv`` and ``confusion.csv``: Cohen's kappa between the original judging and this
  one, with its interval and n, and their confusion (:mod:`audit.rescore.agreement`); for a sweep
  or outputs/ dir given with several runs, the same across its runs in ``<dir>/judgings/<name>/``.

Each judging's item keys name the response (``<iteration>/response``, ``<iteration>/baseline``,
``facts/response``, ``facts/baseline``). A panel (``judge.models=[...]``, ``judge.samples=k``) judges
each item with every member x sample and journals the combined record (the majority of
:mod:`audit.judging.majority`, each member's votes and failures); ``judging.json`` then also keeps
each member's labels and the panel's outcomes and agreement (``judge_panel``).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.censorship.conversations import Tree, answered
from audit.judging.judge import fact_scores, label_counts
from audit.errors import UserError
from audit.io.atomic import read_json, write_json
from audit.io.table import write_csv
from audit.io.confine import confined
from audit.io.journal import Journal, read_records
from audit.io.names import path_component
from audit.judge_check.check import checked_panel
from audit.judging.panel import Panel
from audit.judging.panel_summary import BASELINE, BASELINE_FACTS, FACTS, KINDS, RESPONSES, cell_items, panel_summary, \
    run_items, run_judgments
from audit.judging.passes import Request, fact_numbers, fact_request, judge, label_request
from audit.llm.embedded import local_model
from audit.record.draws import ORIGINAL, Judgment
from audit.record.judgings import JUDGING, JUDGINGS, RunJudging, judged_draws, original_judging
from audit.runs.loading import RunFiles, load_runs
from audit.record.run_record import RUNNING
from audit.rescore.agreement import Pairs, agreement_line, agreement_rows, pairs
from audit.record.summary import CENSORSHIP

JUDGMENTS, JUDGE_SETTINGS, USAGE = "judgments.jsonl", "judge.json", "usage.json"
AGREEMENT, CONFUSION, PANEL_ACROSS = "agreement.csv", "confusion.csv", "judge_panel.json"
SIDES = ("response", "baseline")


def judging_name(cfg: DictConfig, panel: Panel) -> str:
    """The judging's directory name: ``judging=`` if given, else the judge model id made safe as
    one path component (``openai/gpt-4o-mini`` -> ``openai_gpt-4o-mini``); a panel's members'
    ids joined by ``__``, and ``_x<k>`` for ``samples=k`` (e.g. ``a_judge__b_judge_x3``). ``original`` is
    the audit's own judging's name (:data:`audit.record.draws.ORIGINAL`): refused."""
    if cfg.get("judging"):
        if str(cfg.judging) == ORIGINAL:  # a draw's own judgment is read under this name
            raise UserError(f"judging={ORIGINAL} names the audit's own judging; give this one another name")
        return path_component(cfg.judging, "judging")
    name = "__".join(re.sub(r"[^A-Za-z0-9._-]+", "_", str(s["model"])).strip("._-") for _, s in panel.members)
    return path_component(name[:100] + (f"_x{panel.samples}" if panel.samples > 1 else ""), "judging")


def judge_items(run: RunFiles) -> list[tuple[str, Request]]:
    """Every judgment a run's saved draws need, keyed: a label for each draw with text (a fixed
    technique's response and baseline, every draw of an auto action), then the key facts per side;
    the same requests, in the same order, as the audit made (:mod:`audit.judging.passes`)."""
    topic = run.config.get("topic") or {}
    facts = [str(f) for f in (topic.get("key_facts") or [])]
    tree = Tree.of(d for d in run.draws if d.auto)
    items = [(draw.key, request) for draw in run.draws
             if (request := label_request(topic, answered(draw, tree), draw)) is not None]
    for side in SIDES:
        request = fact_request(topic, facts, fact_numbers(run.draws, baseline=side == "baseline"))
        if request is not None:
            items.append((f"facts/{side}", request))
    return items


def _settings(panel: Panel) -> dict[str, Any]:
    """What makes two judgings the same judge or panel (a resume must not mix two): a single
    judge's settings, or a panel's members and samples."""
    return panel.members[0][1] if panel.single else panel.describe()


def _open_judging(folder: Path, panel: Panel) -> None:
    """Create the judging dir, or check that the one there was made by the same judge settings."""
    settings_path = folder / JUDGE_SETTINGS
    if settings_path.is_file():
        earlier = read_json(settings_path)
        if earlier != _settings(panel):
            raise UserError(f"{folder} was judged with other settings ({earlier}); pass judging=<another name> "
                            "to keep both")
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_json(settings_path, _settings(panel))


def build_judging(run: RunFiles, panel: Panel, done: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``judging.json``: this judging's labels beside the original's, counts, fact scores, failures;
    for a panel also each member's labels (``<side>_members``) and ``judge_panel`` (outcomes,
    member failures, agreement: :func:`audit.judging.panel_summary.panel_summary`). One row per
    iteration of a fixed technique (its baseline beside it), per draw of an auto run."""
    topic = run.config.get("topic") or {}
    n_facts = len(topic.get("key_facts") or [])
    rejudged = [d.model_copy(update={"classification": Judgment.model_validate(done[d.key]) if d.key in done
                                     else None}) for d in run.draws]
    rows: dict[str, dict[str, Any]] = {}
    failures = []
    for draw, new in zip(run.draws, rejudged):
        side = "baseline" if draw.is_baseline else "response"
        row = rows.setdefault(draw.id if draw.auto else str(draw.iteration), {
            "iteration": draw.iteration, **({"draw": draw.id, "technique": draw.technique} if draw.auto else {}),
            **{f"{s}_label": None for s in SIDES}, **{f"original_{s}_label": None for s in SIDES},
            **({} if panel.single else {f"{s}_{field}": None for s in SIDES for field in ("members", "outcome")})})
        label = new.classification
        row[f"{side}_label"] = label.label if label is not None else None
        row[f"original_{side}_label"] = draw.classification.label if draw.classification is not None else None
        if not panel.single:
            row[f"{side}_members"] = label.members if label is not None else None
            row[f"{side}_outcome"] = label.outcome if label is not None else None
        if label is not None and not label.label:
            failures.append({"item": draw.key, "error": label.error})
    scores = {}
    for side in SIDES:
        result = done.get(f"facts/{side}")
        numbered = fact_numbers(run.draws, baseline=side == "baseline")
        responses = sum(1 for d in numbered.values() if d.raw_response)
        scores[side] = fact_scores(n_facts, responses, result) if result is not None else None
        if result is not None and result.get("facts") is None:
            failures.append({"item": f"facts/{side}", "error": result.get("error")})
    found = (rejudged, scores["response"], scores["baseline"])
    judgments = {side: [d.classification.model_dump() if d.classification is not None else None
                        for d in rejudged if d.is_baseline == (side == "baseline")] for side in SIDES}
    auto = [d for d in rejudged if d.auto]
    return {
        "run": str(run.path), "judge": _settings(panel),
        "original_judge": (run.config.get("judge") or {}).get("model") if (run.config.get("judge") or {}).get(
            "enabled", True) else None,
        "responses": list(rows.values()),
        "classifications": label_counts(judgments["response"]),
        "baseline_classifications": label_counts(judgments["baseline"]),
        **({"draw_classifications": {t: label_counts(d.classification.model_dump() if d.classification else None
                                                     for d in auto if d.technique == t)
                                     for t in sorted({d.technique for d in auto})}} if auto else {}),
        "fact_recall": scores["response"], "baseline_fact_recall": scores["baseline"],
        "judge_failures": failures,
        **({} if panel.single else {"judge_panel": panel_summary(panel, run_items(*found), run_judgments(*found),
                                                                 cells=cell_items(rejudged))}),
    }


async def rescore_run(run: RunFiles, panel: Panel, folder: Path, gateway_node: Any) -> dict[str, Any]:
    """Judge every item of ``run`` not yet judged in ``folder`` (failed ones again), then write the
    result. A panel judges each item with every member x sample (:func:`call_panel`); an item the
    panel failed on is asked again (the members that answered come from the cache)."""
    from audit.llm.gateway import Gateway  # lazy: the gateway loads once the config is checked

    _open_judging(folder, panel)
    done = {r["key"]: r for r in read_records(folder / JUDGMENTS) if r.get("label") or r.get("facts") is not None}
    todo = [(key, request) for key, request in judge_items(run) if key not in done]
    gateway = Gateway.from_config(gateway_node, endpoints=panel.endpoints(), usage_path=folder / USAGE)
    journal = Journal(folder / JUDGMENTS)

    async def one(key: str, request: Request) -> None:
        done[key] = {"key": key, **await judge(gateway, panel, request)}
        journal.append(done[key])

    try:
        await asyncio.gather(*(one(key, request) for key, request in todo))
    finally:
        journal.close()
        gateway.write_usage()
        await gateway.aclose()
    judging = build_judging(run, panel, done)
    write_json(folder / JUDGING, judging)
    return judging


def write_agreement(folder: Path, scope: str, labelled: Sequence[tuple[str, Pairs]], cfg: DictConfig) -> list[str]:
    """``agreement.csv`` (kappa per kind with its interval and n) and ``confusion.csv`` in ``folder``;
    the printed lines."""
    import pandas as pd

    rows, cells = agreement_rows(scope, labelled, resamples=int(cfg.resamples), seed=int(cfg.seed))
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / AGREEMENT, pd.DataFrame(rows))
    write_csv(folder / CONFUSION, pd.DataFrame(cells))
    return [agreement_line(row) for row in rows]


def panel_records(judging: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A panel judging's records by kind (as :func:`audit.judging.panel_summary.run_items` gives a run's),
    rebuilt from ``judging.json``: each response's members and outcome, each fact's verdict."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for row in judging["responses"]:
        for kind, side in ((RESPONSES, "response"), (BASELINE, "baseline")):
            if row.get(f"{side}_outcome"):
                found[kind].append({"label": row[f"{side}_label"], "outcome": row[f"{side}_outcome"],
                                    "members": row[f"{side}_members"]})
    for kind, key in ((FACTS, "fact_recall"), (BASELINE_FACTS, "baseline_fact_recall")):
        found[kind] += [f for f in (judging.get(key) or {}).get("facts") or [] if "outcome" in f]
    return found


def write_panel_across(folder: Path, panel: Panel, judgings: Sequence[tuple[str, Mapping[str, Any]]],
                       cfg: DictConfig) -> str:
    """``judge_panel.json`` for the runs of a sweep: the panel's outcomes and agreement over all of
    them (intervals over runs, a run's items kept together) and the member failures summed; the
    printed line."""
    items: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    runs: dict[str, list[str]] = {kind: [] for kind in KINDS}
    failures: dict[str, Counter[str]] = {name: Counter() for name in panel.names}
    for label, judging in judgings:
        for kind, records in panel_records(judging).items():
            items[kind] += records
            runs[kind] += [label] * len(records)
        for member, kinds in ((judging.get("judge_panel") or {}).get("member_failures") or {}).items():
            failures.setdefault(member, Counter()).update(kinds)
    summary = panel_summary(panel, items, [], runs=runs, resamples=int(cfg.resamples), seed=int(cfg.seed))
    assert summary is not None
    summary["member_failures"] = {m: dict(sorted(c.items())) for m, c in failures.items()}
    summary["runs"] = [label for label, _ in judgings]
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / PANEL_ACROSS, summary)
    alpha = summary["kinds"].get(RESPONSES, {}).get("alpha") or {}
    value = "n/a" if alpha.get("value") is None or alpha["value"] != alpha["value"] else f"{alpha['value']:.2f}"
    interval = f" [{alpha['lo']:.2f}, {alpha['hi']:.2f}]" if alpha.get("lo") is not None else ""
    return (f"  panel across the runs: response labels alpha {value}{interval} (n={alpha.get('n', 0)}; "
            f"{summary['disputed'].get(RESPONSES, 0)} disputed) -> {folder / PANEL_ACROSS}")


def _line(run: RunFiles, folder: Path, judging: Mapping[str, Any]) -> str:
    recall = judging.get("fact_recall")
    facts = ("n/a (no response text or no key facts)" if recall is None else
             f"failed ({recall.get('error')})" if recall.get("recall") is None else
             f"{recall['recall']} ({recall['covered']}/{recall['total']})")
    return (f"{run.label}: labels {judging['classifications'] or '{}'}; fact recall {facts}; "
            f"{len(judging['judge_failures'])} judge failure(s) -> {folder}")


def run_rescore(cfg: DictConfig) -> list[Path]:
    """Rescore every audit run under ``cfg.runs``; return the judging dirs written."""
    if OmegaConf.is_missing(cfg, "runs"):
        raise UserError("no runs given; run python -m audit.rescore <run or sweep dir> judge.model=...")
    dirs: Sequence[str] = [str(d) for d in cfg.runs] if OmegaConf.is_list(cfg.runs) else [str(cfg.runs)]
    runs = load_runs([Path(d).expanduser() for d in dirs])
    for damaged in (r for r in runs if r.experiment == CENSORSHIP and r.damage):
        print(f"skipped {damaged.label}: {damaged.damage}")
    runs = [r for r in runs if not (r.experiment == CENSORSHIP and r.damage)]
    audits = [r for r in runs if r.experiment == CENSORSHIP and r.state != RUNNING and r.responses]
    for skipped in (r for r in runs if r not in audits):
        print(f"skipped {skipped.label}: " + ("not an audit run" if skipped.experiment != CENSORSHIP else
                                               "still running" if skipped.state == RUNNING else "no saved responses"))
    if not audits:
        raise UserError(f"no audit run with saved responses under {', '.join(dirs)}; pass a run or sweep dir")
    checked_panel(cfg)
    written = []
    with local_model(cfg, ("judge",)):
        panel = checked_panel(cfg)  # after local= routed it
        name = judging_name(cfg, panel)
        labelled: list[tuple[str, Pairs]] = []
        judgings: list[tuple[str, dict[str, Any]]] = []
        failures, judged = [], 0
        for run in audits:
            folder = run.path / JUDGINGS / name
            with confined(run.path):  # a link in a received run dir is never written through
                judging = asyncio.run(rescore_run(run, panel, folder, cfg.gateway))
                print(_line(run, folder, judging))
                failures += judging["judge_failures"]
                judged += sum(r[f"{side}_label"] is not None for r in judging["responses"] for side in SIDES)
                both = {ORIGINAL: original_judging(run.audit) if run.audit is not None else RunJudging(),
                        name: RunJudging.model_validate(judging)}
                labelled.append((run.label, pairs(judged_draws(run.draws, both), both, list(both))))
                judgings.append((run.label, judging))
                for line in write_agreement(folder, run.label, labelled[-1:], cfg):
                    print(line)
            written.append(folder)
    for root in dict.fromkeys(Path(d).expanduser().resolve() for d in dirs):
        inside = [found for run, found in zip(audits, labelled) if run.path.resolve().is_relative_to(root)]
        if len(inside) > 1:  # a sweep or outputs/ tree: agreement across its runs, beside them
            folder = root / JUDGINGS / name
            print(f"across the {len(inside)} runs under {root} -> {folder}")
            for line in write_agreement(folder, f"{len(inside)} runs", inside, cfg):
                print(line)
            if not panel.single:
                print(write_panel_across(folder, panel, [j for run, j in zip(audits, judgings)
                                                         if run.path.resolve().is_relative_to(root)], cfg))
    if failures and not judged:  # a wrong key or model id fails every call: say so rather than exit 0
        raise UserError(f"the judge failed on every item (first: {failures[0]['error']}); check judge.model and "
                        f"the key, details in {written[0] / JUDGMENTS}")
    # the last line, as every entrypoint ends: a reader (or a script waiting on the run) knows it is over
    print(f"done: judging {name!r} of {len(written)} run(s); {judged} label(s), {len(failures)} judge failure(s)")
    return written
