"""Rescoring saved audit runs with another judge: the I/O side of ``python -m audit.rescore``.

For every audit run found under the given directories (read through :func:`audit.runs.loading.load_runs`,
the one reader of run dirs), the judge labels each saved response and baseline response and scores
the key facts, exactly as an audit's judge does (the same prompt files, blind to model and
technique, response schemas and parsers: :mod:`audit.censorship.judging`, one call each through
:func:`audit.censorship.judge_call.call_judge`). Neither the auditor nor the target is called.

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
``facts/response``, ``facts/baseline``), so a panel can later add one member per judging dir and
combine them by item with :mod:`audit.judges.majority`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.censorship.judge_call import call_judge
from audit.censorship.judging import (CLASSIFICATION_FORMAT, classification_messages, fact_messages, fact_scores,
                                      facts_format, judged_parts, label_counts, parse_classification,
                                      parse_fact_coverage)
from audit.errors import UserError
from audit.io.atomic import read_json, write_json, write_text
from audit.io.journal import Journal, read_records
from audit.io.names import path_component
from audit.judge_check.check import checked_judge
from audit.llm.embedded import local_model
from audit.llm.settings import role_endpoint
from audit.runs.loading import RunFiles, load_runs
from audit.runs.record import RUNNING
from audit.rescore.agreement import Pairs, agreement_line, agreement_rows, pairs
from audit.runs.summary import CENSORSHIP

JUDGINGS = "judgings"
JUDGMENTS, JUDGING, JUDGE_SETTINGS, USAGE = "judgments.jsonl", "judging.json", "judge.json", "usage.json"
AGREEMENT, CONFUSION = "agreement.csv", "confusion.csv"
SIDES = ("response", "baseline")


def judging_name(cfg: DictConfig, judge: Mapping[str, Any]) -> str:
    """The judging's directory name: ``judging=`` if given, else the judge model id made safe as
    one path component (``openai/gpt-4o-mini`` -> ``openai_gpt-4o-mini``)."""
    if cfg.get("judging"):
        return path_component(cfg.judging, "judging")
    return path_component(re.sub(r"[^A-Za-z0-9._-]+", "_", str(judge["model"])).strip("._-")[:100], "judging")


def judge_items(run: RunFiles) -> list[tuple[str, list[dict[str, Any]], Any, Any]]:
    """Every judge call a run's saved responses need, as ``(key, messages, parse, response_format)``:
    a label for each response and baseline response with text, then the key facts per side (the
    same calls, in the same order, as the audit made). The prefill stays apart (blind judging)."""
    topic = run.config.get("topic") or {}
    facts = [str(f) for f in (topic.get("key_facts") or [])]
    items: list[tuple[str, list[dict[str, Any]], Any, Any]] = []
    texts: dict[str, dict[int, tuple[str, str]]] = {side: {} for side in SIDES}
    for record in run.responses:
        k = int(record["iteration"])
        for side, saved in (("response", record), ("baseline", record.get("baseline"))):
            opening, own = judged_parts(saved)
            if own is None:
                continue
            items.append((f"{k}/{side}", classification_messages(topic, str(record.get("prompt_sent") or ""), own,
                                                               opening), parse_classification, CLASSIFICATION_FORMAT))
            if own:
                texts[side][k] = (opening, own)
    for side in SIDES:
        shown = texts[side]
        if facts and shown:
            responses = {k: own for k, (_, own) in shown.items()}
            items.append((f"facts/{side}", fact_messages(topic, facts, responses, {k: o for k, (o, _) in shown.items()}),
                          lambda raw, r=responses: {"facts": parse_fact_coverage(raw, facts, r)},
                          facts_format(len(facts))))
    return items


def _settings(judge: Mapping[str, Any]) -> dict[str, Any]:
    """What makes two judgings the same judge (a resume must not mix two)."""
    return {k: judge.get(k) for k in ("model", "endpoint", "temperature", "max_tokens", "structured_output")}


def _open_judging(folder: Path, judge: Mapping[str, Any]) -> None:
    """Create the judging dir, or check that the one there was made by the same judge settings."""
    settings_path = folder / JUDGE_SETTINGS
    if settings_path.is_file():
        earlier = read_json(settings_path)
        if earlier != _settings(judge):
            raise UserError(f"{folder} was judged with other settings ({earlier}); pass judging=<another name> "
                            "to keep both")
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_json(settings_path, _settings(judge))


def build_judging(run: RunFiles, judge: Mapping[str, Any], done: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``judging.json``: this judging's labels beside the original's, counts, fact scores, failures."""
    topic = run.config.get("topic") or {}
    n_facts = len(topic.get("key_facts") or [])
    rows, failures = [], []
    for record in run.responses:
        k = int(record["iteration"])
        row: dict[str, Any] = {"iteration": k}
        for side, saved in (("response", record), ("baseline", record.get("baseline"))):
            new = done.get(f"{k}/{side}")
            row[f"{side}_label"] = (new or {}).get("label") if new is not None else None
            row[f"original_{side}_label"] = ((saved or {}).get("classification") or {}).get("label")
            if new is not None and not new.get("label"):
                failures.append({"item": f"{k}/{side}", "error": new.get("error")})
        rows.append(row)
    scores = {}
    for side in SIDES:
        result = done.get(f"facts/{side}")
        responses = sum(1 for r in run.responses if judged_parts(r if side == "response" else r.get("baseline"))[1])
        scores[side] = fact_scores(n_facts, responses, result) if result is not None else None
        if result is not None and result.get("facts") is None:
            failures.append({"item": f"facts/{side}", "error": result.get("error")})
    return {
        "run": str(run.path), "judge": _settings(judge),
        "original_judge": (run.config.get("judge") or {}).get("model") if (run.config.get("judge") or {}).get(
            "enabled", True) else None,
        "responses": rows,
        "classifications": label_counts(done.get(f"{r['iteration']}/response") for r in rows),
        "baseline_classifications": label_counts(done.get(f"{r['iteration']}/baseline") for r in rows),
        "fact_recall": scores["response"], "baseline_fact_recall": scores["baseline"],
        "judge_failures": failures,
    }


async def rescore_run(run: RunFiles, judge: Mapping[str, Any], folder: Path, gateway_node: Any) -> dict[str, Any]:
    """Judge every item of ``run`` not yet judged in ``folder`` (failed ones again), then write the result."""
    from audit.llm.gateway import Gateway

    _open_judging(folder, judge)
    done = {r["key"]: r for r in read_records(folder / JUDGMENTS) if r.get("label") or r.get("facts") is not None}
    todo = [item for item in judge_items(run) if item[0] not in done]
    gateway = Gateway.from_config(gateway_node, endpoints=[role_endpoint(judge)], usage_path=folder / USAGE)
    journal = Journal(folder / JUDGMENTS)

    async def one(key: str, messages: list[dict[str, Any]], parse: Any, response_format: Any) -> None:
        result = await call_judge(gateway, judge, messages, parse, response_format)
        done[key] = {"key": key, **result}
        journal.append(done[key])

    try:
        await asyncio.gather(*(one(*item) for item in todo))
    finally:
        journal.close()
        gateway.write_usage()
        await gateway.aclose()
    judging = build_judging(run, judge, done)
    write_json(folder / JUDGING, judging)
    return judging


def _original(run: RunFiles) -> dict[str, Any]:
    """The run's own fact scores (its labels are in ``judging.json`` already)."""
    summary = run.audit
    return {} if summary is None else {"fact_recall": summary.fact_recall,
                                       "baseline_fact_recall": summary.baseline_fact_recall}


def write_agreement(folder: Path, scope: str, labelled: Sequence[tuple[str, Pairs]], cfg: DictConfig) -> list[str]:
    """``agreement.csv`` (kappa per kind with its interval and n) and ``confusion.csv`` in ``folder``;
    the printed lines."""
    import pandas as pd

    rows, cells = agreement_rows(scope, labelled, resamples=int(cfg.resamples), seed=int(cfg.seed))
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / AGREEMENT, pd.DataFrame(rows).to_csv(index=False))
    write_text(folder / CONFUSION, pd.DataFrame(cells).to_csv(index=False))
    return [agreement_line(row) for row in rows]


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
    # a technique=auto run keeps its draws under each response's "draws": not rescored yet, said so
    auto = [r for r in runs if any("draws" in record for record in r.responses or [])]
    audits = [r for r in runs if r.experiment == CENSORSHIP and r.state != RUNNING and r.responses and r not in auto]
    for skipped in (r for r in runs if r not in audits):
        print(f"skipped {skipped.label}: " + ("not an audit run" if skipped.experiment != CENSORSHIP else
                                               "still running" if skipped.state == RUNNING else
                                               "a technique=auto run (rescore does not read its draws yet)"
                                               if skipped in auto else "no saved responses"))
    if not audits:
        raise UserError(f"no audit run with saved responses under {', '.join(dirs)}; pass a run or sweep dir")
    checked_judge(cfg)
    written = []
    with local_model(cfg, ("judge",)):
        judge = checked_judge(cfg)  # after local= routed it
        name = judging_name(cfg, judge)
        labelled: list[tuple[str, Pairs]] = []
        failures, judged = [], 0
        for run in audits:
            folder = run.path / JUDGINGS / name
            judging = asyncio.run(rescore_run(run, judge, folder, cfg.gateway))
            print(_line(run, folder, judging))
            failures += judging["judge_failures"]
            judged += sum(r[f"{side}_label"] is not None for r in judging["responses"] for side in SIDES)
            labelled.append((run.label, pairs(_original(run), judging)))
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
    if failures and not judged:  # a wrong key or model id fails every call: say so rather than exit 0
        raise UserError(f"the judge failed on every item (first: {failures[0]['error']}); check judge.model and "
                        f"the key, details in {written[0] / JUDGMENTS}")
    return written
