"""``resume=<run dir>``: what a continued run takes from its saved config, for both experiments.

Everything that defines the experiment comes from the saved run, so a resume cannot
silently mix two experiments; connection settings may legitimately change between
sessions (e.g. a longer timeout after the run died on one), so they come from the command.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.errors import UserError
from audit.io.atomic import read_json
from audit.jobs.saved_config import check_saved_config

GATEWAY_KEYS = ("gateway",)
"""Config nodes a resume takes from the current invocation; everything else comes from the saved run."""


def read_saved(path: Path, fix: str) -> dict[str, Any]:
    """A JSON object a run saved, read for its resume; a file damaged outside the program (every
    write is atomic, so a kill cannot truncate one) is a one-line :class:`UserError` naming it and ``fix``."""
    try:
        record = read_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"resume: {path} is damaged ({getattr(exc, 'problem', exc)}); {fix}") from None
    if not isinstance(record, dict):
        raise UserError(f"resume: {path} is damaged (not a JSON object); {fix}")
    return record


def resumed_config(saved: DictConfig, current: DictConfig) -> DictConfig:
    """The saved run's config, with the gateway settings (base URL, timeouts, cache) of this invocation."""
    check_saved_config(saved, current, Path(str(current.resume)))
    merged = OmegaConf.create(OmegaConf.to_container(saved, resolve=True))
    for key in GATEWAY_KEYS:
        if key in current:
            merged[key] = OmegaConf.to_container(current[key], resolve=True)
    merged.resume = str(current.resume)
    return merged


_CHECKED: ContextVar[bool] = ContextVar("resume_overrides_checked", default=False)


@contextmanager
def overrides_checked() -> Iterator[None]:
    """Within the block a resume takes no overrides from the command line: a sweep being finished
    passes each job its saved overrides (equal to what its run saved), and the finish checked the
    command's own extras already (:func:`audit.jobs.finish.finish_argv`)."""
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def command_line_overrides() -> list[str]:
    """The overrides this command was given (``key=value``, ``group=option``), when run by Hydra."""
    from hydra.core.hydra_config import HydraConfig

    if _CHECKED.get() or not HydraConfig.initialized():
        return []
    return list(HydraConfig.get().overrides.task)


RESUME_OVERRIDES = (*GATEWAY_KEYS, "budget", "hydra", "resume")
"""What a resume's command line may set: connection settings, the spending cap (applied to the
command, not saved with the run), Hydra's own settings and ``resume`` itself."""


def refuse_resume_overrides(overrides: list[str]) -> None:
    """A resume runs the saved config, so any other override would be silently ignored: refuse
    it in one line, naming it, before the run dir is touched."""
    refused = [key for key in (o.split("=", 1)[0].lstrip("+~") for o in overrides)
               if key.split(".")[0].split("/")[0] not in RESUME_OVERRIDES]
    if refused:
        raise UserError(f"resume: a resumed run keeps its saved config, so {', '.join(refused)} cannot change "
                        "(only gateway.* and budget.* can); drop them, or start a new run without resume=")
