"""Run the configured judge (or judge panel) on a researcher's labelled responses and key-fact
verdicts, and compare (the I/O side).

The judge is asked exactly as in an audit: the same prompt files, response schema and parser
(:func:`audit.judging.judge.classification_messages`, ``CLASSIFICATION_FORMAT``,
:func:`~audit.judging.judge.parse_classification`), through the one gateway (its cache,
retries and ledger), so what is validated here is the judge the audits use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit import config_values
from audit.judging.judge import CLASSES, FACT_STATUSES
from audit.judging.passes import fact_request, judge, label_request
from audit.record.rundir import fresh_run_path
from audit.errors import UserError, unknown_choice
from audit.io.names import path_component
from audit.judging.agreement import kappa_interval
from audit.judging.panel import Panel, panel_from_node
from audit.judging.panel_summary import member_label
from audit.judge_check.labels import Labelled, parse_labels
from audit.judge_check.metrics import validate
from audit.judge_check.report import write_outputs
from audit.llm.embedded import chosen_roles, local_model
from audit.paths import CONF_DIR


def read_labels(path: Path) -> list[Labelled]:
    """The labelled rows of ``path``; a missing or unreadable file is one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give the labelled CSV, e.g. python -m audit.judge_check "
                        "my_labels.csv") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory; give the labelled CSV file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text; save the CSV as UTF-8") from None
    return parse_labels(text, str(path))


def load_topic(name: str) -> DictConfig:
    """A topic's config (``conf/topic/<name>.yaml``), as an audit of that topic would see it."""
    folder = Path(CONF_DIR) / "topic"
    path = folder / f"{path_component(name, 'topic')}.yaml"
    if not path.is_file():
        raise unknown_choice("topic", name, (p.stem for p in folder.glob("*.yaml")))
    return OmegaConf.load(path)


def checked_panel(cfg: DictConfig) -> Panel:
    """The judge or judge panel (``judge.models``, ``judge.samples``), checked before any call."""
    panel = panel_from_node(cfg.get("judge"), local=bool(chosen_roles(cfg.get("local"), ("judge",))))
    if panel is None:
        raise UserError("judge=off: there is no judge to run; choose one, e.g. judge=default or judge.model=...")
    return panel


async def judge_one(gateway: Any, panel: Panel, topic: Mapping[str, Any], row: Labelled) -> dict[str, Any]:
    """The judge's (or panel's) label for one response, as an audit would get it; a failure is
    recorded, not raised."""
    request = label_request(topic, row.probe, {"raw_response": row.response})
    assert request is not None  # a labelled row always has its response text
    return await judge(gateway, panel, request)


async def judge_facts(gateway: Any, panel: Panel, topic: Mapping[str, Any], row: Labelled) -> dict[str, Any] | None:
    """The judge's (or panel's) verdict on each key fact of the row's topic from this response
    alone, as an audit's fact scoring gets it (quotes checked); None when the row labels no fact."""
    if not row.facts:
        return None
    request = fact_request(topic, [str(f) for f in topic.get("key_facts") or []], {1: {"raw_response": row.response}})
    return None if request is None else await judge(gateway, panel, request)


def check_fact_numbers(rows: Sequence[Labelled], topics: Mapping[str, Any]) -> None:
    """A ``fact_<n>`` beyond the row's topic's key facts is one line naming the row and the count."""
    for row in rows:
        count = len(topics[row.topic].get("key_facts") or [])
        beyond = [n for n in row.facts if n > count]
        if beyond:
            raise UserError(f"row {row.id}: fact_{beyond[0]} is labelled but topic {row.topic} has {count} key facts; "
                            f"leave fact_{beyond[0]} empty for it")


def fact_items(rows: Sequence[Labelled], verdicts: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """One item per labelled fact verdict: the researcher's and the judge's (None: failed), with the
    response as the cluster (a response's facts are judged in one call: they are not independent)."""
    items = []
    for row, result in zip(rows, verdicts):
        judged = (result or {}).get("facts")
        for number, human in sorted(row.facts.items()):
            entry = judged[number - 1] if judged is not None else {}
            items.append({"id": row.id, "run": row.run, "fact_no": number, "human": human,
                          "judge": entry.get("status") if entry.get("outcome") != "failed" else None,
                          "error": (result or {}).get("error") or "", "cluster": row.run or row.id})
    return items


def member_agreement(panel: Panel, human: Sequence[str], results: Sequence[Mapping[str, Any]],
                     runs: Sequence[str | None], *, resamples: int, seed: int) -> dict[str, Any]:
    """For a panel, each member's own kappa against the researcher's labels (its samples'
    majority; empty for a single judge): which member the panel's figure rests on."""
    if panel.single:
        return {}
    several = len({r or "" for r in runs}) > 1
    return {name: kappa_interval(human, [member_label((res.get("members") or {}).get(name) or [None])
                                         for res in results], [r or "" for r in runs] if several else None,
                                 categories=CLASSES, resamples=resamples, seed=seed)
            for name in panel.names}


def shown_judge(panel: Panel) -> dict[str, Any]:
    """The judge's settings as the outputs show them: a single judge's, or the panel's members."""
    if panel.single:
        return dict(panel.members[0][1])
    return {"model": f"panel of {', '.join(panel.names)} ({panel.samples} sample(s) each)",
            "endpoint": ", ".join(panel.endpoints()), "temperature": "per member", **panel.describe()}


def run_check(cfg: DictConfig, judge_name: str = "judge") -> Path:
    """Check the judge against ``cfg.labels``; return the directory the results were written to."""
    if OmegaConf.is_missing(cfg, "labels"):
        raise UserError("no labelled CSV given; run python -m audit.judge_check my_labels.csv (columns: "
                        "see src/audit/judge_check/data/labels_template.csv)")
    labels = Path(str(cfg.labels)).expanduser()
    rows = read_labels(labels)
    topics = {name: load_topic(name) for name in dict.fromkeys(r.topic for r in rows)}
    check_fact_numbers(rows, topics)
    resamples = config_values.whole_number(cfg, "resamples", minimum=100) or 0
    seed = config_values.whole_number(cfg, "seed", minimum=0) or 0
    checked_panel(cfg)
    out = fresh_run_path(Path(str(cfg.output_dir)).expanduser().absolute(), {"experiment": "judge_check", "judge": judge_name})
    with local_model(cfg, ("judge",)):
        panel = checked_panel(cfg)  # after local= routed it
        from audit.llm.gateway import Gateway  # lazy: the gateway loads once the config is checked

        gateway = Gateway.from_config(cfg.gateway, endpoints=panel.endpoints(), usage_path=out / "usage.json")
        out.mkdir(parents=True)

        async def judge_all() -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
            try:
                labelled = asyncio.gather(*(judge_one(gateway, panel, topics[r.topic], r) for r in rows))
                facts = asyncio.gather(*(judge_facts(gateway, panel, topics[r.topic], r) for r in rows))
                return list(await labelled), list(await facts)
            finally:
                await gateway.aclose()

        results, verdicts = asyncio.run(judge_all())
        gateway.write_usage()
    metrics = validate([r.label for r in rows], [res["label"] for res in results], [r.run for r in rows],
                       CLASSES, resamples=resamples, seed=seed)
    metrics["members"] = member_agreement(panel, [r.label for r in rows], results, [r.run for r in rows],
                                          resamples=resamples, seed=seed)
    items = fact_items(rows, verdicts)
    facts = validate([i["human"] for i in items], [i["judge"] for i in items], [i["cluster"] for i in items],
                     FACT_STATUSES, resamples=resamples, seed=seed) if items else None
    write_outputs(out, labels, shown_judge(panel), rows, results, metrics, facts, items)
    if not metrics["judged"]:  # a wrong key or model id fails every call: say so rather than exit 0
        raise UserError(f"the judge failed on every response (first: {results[0]['error']}); "
                        f"check judge.model and the key, details in {out}/judge_check_items.csv")
    return out
