"""Continuing an audit from its run dir (``resume=<run dir>``): the saved ``local=`` roles served
again, a finished run's missing outputs rebuilt without a model call, and ``max_iterations`` raised
to carry a finished audit further. What a resume redoes step by step is the loop's
(:mod:`audit.censorship.loop`): the first missing file is the next thing to do."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from audit.censorship.progress import say
from audit.censorship.report import REPORT, write_report
from audit.censorship.run_dir import AuditDir
from audit.errors import UserError
from audit.io.atomic import write_text
from audit.record.rundir import load_saved_config
from audit.llm.ledger import Ledger


def with_saved_local(cfg: DictConfig) -> DictConfig:
    """``cfg``, with ``local=`` taken from the saved run on a resume: its roles were routed to the
    embedded model, which must serve them again (on a new port, in this command's gateway), and a
    resume's command line cannot say ``local=``. An unreadable run dir is left to :func:`open_existing`."""
    saved_path = Path(str(cfg.get("resume"))).expanduser() / "config.yaml" if cfg.get("resume") else None
    if saved_path is not None and saved_path.is_file():
        with open_dict(cfg):
            cfg.local = load_saved_config(saved_path).get("local", False)
    return cfg


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
