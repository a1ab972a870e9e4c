"""Any model as the "fine-tuned" baseline (e.g. a model trained to say "I don't know"),
asked exactly like the raw LLM so the only difference is the model's weights. Its config
has no default model (``model: ???``): the pipeline asks for ``system.model=<id>``."""

from __future__ import annotations

from audit.epistemic.systems.raw_llm import FIELDS, NEEDS_LLM, create

__all__ = ["FIELDS", "NEEDS_LLM", "create"]
