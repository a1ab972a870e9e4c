"""Graph-licensed RAG: the RAG answer, gated by the licensing check. The model may say
YES only when the licenser says E; a blocked YES becomes the licenser's answer (NO for a
violation, UNKNOWN for open world) and the row says which shape or fact blocked it.
NO and UNKNOWN pass unchanged: the gate licenses assertions, it does not invent them."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from audit.record.answers import Card
from audit.epistemic.systems.base import LABEL_TO_PRED, Reply, system_id
from audit.epistemic.systems.rag import FIELDS, RAG
from audit.epistemic.systems.rag import create as create_rag

NEEDS_LLM = True
__all__ = ["FIELDS", "NEEDS_LLM", "create"]


class GraphRAG:
    def __init__(self, rag: RAG, licenser: Any, id: str):
        self.rag, self.licenser, self.id = rag, licenser, id

    async def answer(self, card: Card) -> Reply:
        answer = await self.rag.answer(card)
        if answer.pred is None:
            return answer
        verdict = self.licenser.judge(*card.claim_triple())
        answer.extra.update(llm_pred=answer.pred, verdict=verdict.label)
        if answer.pred == "YES" and verdict.label != "E":
            answer.pred = LABEL_TO_PRED[verdict.label]
            answer.reason = f"gate blocked YES ({verdict.label}): {verdict.reason}"
        else:
            answer.reason = f"gate passed {answer.pred} ({verdict.label}): {verdict.reason}"
        return answer


def create(cfg: DictConfig, *, domain: Any, gateway: Any) -> GraphRAG:
    return GraphRAG(create_rag(cfg, domain=domain, gateway=gateway), domain.licenser, system_id(cfg))
