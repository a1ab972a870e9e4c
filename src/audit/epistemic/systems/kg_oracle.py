"""KG oracle: answers from the licenser's verdict on the card's claim (E→YES, C→NO,
U→UNKNOWN). It never reads the card's text, so nothing a card says can leak the label;
it is the ceiling every other system is compared with."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from audit.record.answers import Card
from audit.epistemic.systems.base import LABEL_TO_PRED, Reply, system_id

NEEDS_LLM = False


class KGOracle:
    def __init__(self, licenser: Any, id: str):
        self.licenser = licenser
        self.id = id

    async def answer(self, card: Card) -> Reply:
        verdict = self.licenser.judge(*card.claim_triple())
        return Reply(pred=LABEL_TO_PRED[verdict.label], reason=verdict.reason)


def create(cfg: DictConfig, *, domain: Any, gateway: Any) -> KGOracle:
    return KGOracle(domain.licenser, system_id(cfg))
