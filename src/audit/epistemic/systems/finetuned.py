"""Any model as the "fine-tuned" baseline (e.g. a model trained to say "I don't know"),
asked exactly like the raw LLM so the only difference is the model's weights. There is no
sensible default model, hence the required ``system.model``."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.epistemic.systems.raw_llm import RawLLM
from audit.epistemic.systems.raw_llm import create as create_raw
from audit.errors import UserError

NEEDS_LLM = True


def create(cfg: DictConfig, *, domain: Any, gateway: Any) -> RawLLM:
    if OmegaConf.is_missing(cfg, "model") or not cfg.get("model"):
        raise UserError("system=finetuned needs a model: add system.model=<OpenRouter model id>")
    return create_raw(cfg, domain=domain, gateway=gateway)
