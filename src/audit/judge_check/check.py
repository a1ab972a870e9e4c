"""Run the configured judge on a researcher's labelled responses and compare (the I/O side).

The judge is asked exactly as in an audit: the same prompt files, response schema and parser
(:func:`audit.censorship.judging.classification_messages`, ``CLASSIFICATION_FORMAT``,
:func:`~audit.censorship.judging.parse_classification`), through the one gateway (its cache,
retries and ledger), so what is validated here is the judge the audits use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit import config_values
from audit.censorship.judge_call import call_judge
from audit.censorship.judging import CLASSES, CLASSIFICATION_FORMAT, classification_messages, parse_classification
from audit.runs.rundir import fresh_run_path
from audit.errors import UserError, unknown_choice
from audit.io.names import path_component
from audit.judges.panel import Panel, panel_from_node
from audit.judge_check.labels import Labelled, parse_labels
from audit.judge_check.metrics import validate
from audit.judge_check.report import write_outputs
from audit.llm.embedded import local_model
from audit.llm.settings import role_endpoint
from audit.llm.structured import check_mode
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


def checked_judge(cfg: DictConfig) -> dict[str, Any]:
    """The judge settings, checked before any call (bad input: UserError)."""
    judge = cfg.get("judge")
    if judge is None or not judge.get("enabled", True) or not judge.get("model"):
        raise UserError("judge=off: there is no judge to check; choose one, e.g. judge=default or judge.model=...")
    config_values.model_id(cfg, "judge.model")
    config_values.temperature(cfg, "judge.temperature")
    config_values.max_tokens(cfg, "judge.max_tokens")
    check_mode(str(judge.get("structured_output", "auto")))
    return OmegaConf.to_container(judge, resolve=True)  # type: ignore[return-value]


def checked_panel(cfg: DictConfig) -> Panel:
    """The judge or judge panel (``judge.models``, ``judge.samples``), checked before any call."""
    panel = panel_from_node(cfg.get("judge"))
    if panel is None:
        raise UserError("judge=off: there is no judge to run; choose one, e.g. judge=default or judge.model=...")
    return panel


async def judge_one(gateway: Any, judge: Mapping[str, Any], topic: Mapping[str, Any], row: Labelled) -> dict[str, Any]:
    """The judge's label for one response, as an audit would get it; a failure is recorded, not raised."""
    return await call_judge(gateway, judge, classification_messages(topic, row.probe, row.response),
                            parse_classification, CLASSIFICATION_FORMAT)


def run_check(cfg: DictConfig, judge_name: str = "judge") -> Path:
    """Check the judge against ``cfg.labels``; return the directory the results were written to."""
    if OmegaConf.is_missing(cfg, "labels"):
        raise UserError("no labelled CSV given; run python -m audit.judge_check my_labels.csv (columns: "
                        "see src/audit/judge_check/data/labels_template.csv)")
    labels = Path(str(cfg.labels)).expanduser()
    rows = read_labels(labels)
    topics = {name: load_topic(name) for name in dict.fromkeys(r.topic for r in rows)}
    resamples = config_values.whole_number(cfg, "resamples", minimum=100)
    seed = config_values.whole_number(cfg, "seed", minimum=0)
    checked_judge(cfg)
    out = fresh_run_path(Path(str(cfg.output_dir)).expanduser().absolute(), {"experiment": "judge_check", "judge": judge_name})
    with local_model(cfg, ("judge",)):
        judge = checked_judge(cfg)  # after local= routed it
        from audit.llm.gateway import Gateway

        gateway = Gateway.from_config(cfg.gateway, endpoints=[role_endpoint(judge)], usage_path=out / "usage.json")
        out.mkdir(parents=True)

        async def judge_all() -> list[dict[str, Any]]:
            try:
                return list(await asyncio.gather(*(judge_one(gateway, judge, topics[r.topic], r) for r in rows)))
            finally:
                await gateway.aclose()

        results = asyncio.run(judge_all())
        gateway.write_usage()
    metrics = validate([r.label for r in rows], [res["label"] for res in results], [r.run for r in rows],
                       CLASSES, resamples=resamples or 0, seed=seed or 0)
    write_outputs(out, labels, judge, rows, results, metrics)
    if not metrics["judged"]:  # a wrong key or model id fails every call: say so rather than exit 0
        raise UserError(f"the judge failed on every response (first: {results[0]['error']}); "
                        f"check judge.model and the key, details in {out}/judge_check_items.csv")
    return out
