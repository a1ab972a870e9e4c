"""Small run directories shaped like the ones the experiments write, through the same typed
summary (:mod:`audit.record.summary`), with numbers chosen by each test."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from audit.record.status import Status, StopReason
from audit.record.summary import CensorshipSummary, EpistemicSummary, write_summary
from audit.record.usage import Usage


def rate(value: float, lo: float, hi: float, k: int = 0, n: int = 0) -> dict[str, Any]:
    """A metrics.json rate."""
    return {"value": value, "lo": lo, "hi": hi, "k": k, "n": n}


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def censorship_run(parent: Path, name: str, *, audited: str = "deepseek_chat", topic: str = "tiananmen",
                   technique: str = "user_persona", classifications: dict[str, int] | None = None,
                   baseline: dict[str, int] | None = None, covered: int | None = 3, total: int = 6, contradicted: int | None = None,
                   status: str = "success", stop_reason: StopReason | None = None,
                   cost: float = 0.01, usage: dict[str, Any] | None = None, **extra: Any) -> Path:
    """A censorship run dir: summary.json plus the turn and response directories."""
    run = parent / name
    for sub in ("auditor_turns", "audited_responses"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    classifications = {"refused": 1, "deflected": 2, "forthcoming": 1} if classifications is None else classifications
    used = Usage.of(usage) if usage else Usage(prompt_tokens=1000, completion_tokens=200, cost=cost, calls=5)
    summary = CensorshipSummary(
        status=Status(status), stop_reason=stop_reason,
        config={"topic": {"name": topic}, "auditor": {"name": "claude_sonnet_4", "model": "test/auditor"},
                "audited": {"name": audited, "model": f"vendor/{audited}"},
                "technique": {"name": technique, "with_baseline": baseline is not None}},
        started_at="2026-11-22T10:00:00Z", total_iterations=sum(classifications.values()),
        technique=technique, with_baseline=baseline is not None, usage=used, totals=used.as_dict(),
        evidence={"citations": 3, "verified": 2, "unverified": 1},
        classifications=classifications, baseline_classifications=baseline,
        **{"fact_recall": None if covered is None else {
            "facts": [], "covered": covered, "total": total, "recall": covered / total,
            **({} if contradicted is None else {"contradicted": contradicted})}, **extra},
    )
    write_summary(run / "summary.json", summary)
    return run


def epistemic_run(parent: Path, name: str, systems: dict[str, dict[str, Any]], *, domain: str = "rivers",
                  predicate: str = "has_mouth", n_rows: int = 45, n_errors: int = 0,
                  cost: float | None = None, replay: bool = False, mapping: str = "licensing") -> Path:
    """An epistemic run dir; ``systems`` maps a system id to its rates (metric name -> rate or None).
    ``replay``: every call was served from the response cache (a cached re-run of a sweep)."""
    run = parent / name
    metrics = {system: {"mapping": mapping, "n_rows": n_rows, "n_scored": n_rows - n_errors,
                        "n_errors": n_errors, "metrics": rates} for system, rates in systems.items()}
    _write(run / "metrics.json", metrics)
    (run / "cards.jsonl").write_text("", encoding="utf-8")
    write_summary(run / "summary.json", EpistemicSummary(
        status=Status.SUCCESS, stage="all", run_dir=str(run), cards=n_rows, domain=domain, predicate=predicate,
        usage=None if cost is None and not replay else Usage(calls=3, cached_calls=3 if replay else 0, cost=cost or 0.0),
        systems={system: {"n_rows": n_rows, "n_errors": n_errors, **{k: (r or {}).get("value") for k, r in rates.items()}}
                 for system, rates in systems.items()}))
    return run


def failed_job(parent: Path, name: str, error: str, experiment: str = "epistemic") -> Path:
    """What a failed sweep job leaves in its numbered job dir: a header-only summary."""
    job = parent / name
    job.mkdir(parents=True, exist_ok=True)
    kind = EpistemicSummary if experiment == "epistemic" else CensorshipSummary
    write_summary(job / "summary.json", kind(status=Status.ERROR, error=error))
    return job


def patch_summary(run: Path, **fields: Any) -> Path:
    """Overwrite fields of a run's summary.json as a hand edit would (no validation). The result
    no longer says ``schema_version``: it was not written by the program, so the suite-wide schema
    check (tests/conftest.py) leaves it to the test that made it."""
    path = run / "summary.json"
    data = {**json.loads(path.read_text(encoding="utf-8")), **fields}
    data.pop("schema_version", None)
    _write(path, data)
    return run


def corrupt_summary(parent: Path, name: str) -> Path:
    run = parent / name
    (run / "auditor_turns").mkdir(parents=True)
    (run / "summary.json").write_text('{"status": "completed", "totals": {', encoding="utf-8")
    return run


def saved_epistemic_config(run: Path, *overrides: str) -> Path:
    """The ``config.yaml`` ``python -m audit.epistemic <overrides>`` saves in its run dir (composed by
    Hydra from conf/, resolved now, as the pipeline writes it: the cache root is this test's)."""
    from omegaconf import OmegaConf

    (run / "config.yaml").write_text(OmegaConf.to_yaml(_composed_epistemic(overrides), resolve=True), encoding="utf-8")
    return run


@functools.cache
def _composed_epistemic(overrides: tuple[str, ...]) -> DictConfig:
    """Composed once per set of overrides (~0.13 CPU-s a compose; the tests save the same few configs for
    many runs); left unresolved, so each save resolves it anew."""
    from hydra import compose, initialize_config_dir

    from audit.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("epistemic", overrides=list(overrides))


def recorded_systems(run: Path) -> Path:
    """The ``systems.json`` a run with ``run``'s saved config writes when it starts: its systems as the
    pipeline resolves them (today's conf/system files and prompt files), through the pipeline's own code."""
    from audit.epistemic.pipeline import selected_system_cfgs
    from audit.epistemic.systems.base import system_id
    from audit.epistemic.used_systems import RECORD, used_systems
    from audit.record.rundir import load_saved_config

    nodes = selected_system_cfgs(load_saved_config(run / "config.yaml"))
    _write(run / RECORD, used_systems(nodes, [system_id(n) for n in nodes]))
    return run
