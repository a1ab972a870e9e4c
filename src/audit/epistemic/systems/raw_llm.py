"""Raw LLM: the card's facts and question, straight to a chat model (no KG access).
This is the in-context test itself: does the model stay within the facts it is given?"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from audit.record.answers import Card
from audit.epistemic.systems.base import Reply, system_id
from audit.epistemic.systems.llm import Asker, bullet_list

NEEDS_LLM = True
FIELDS = ("facts", "question")
"""What the user template is filled with (it must place each)."""


class RawLLM:
    def __init__(self, asker: Asker, id: str):
        self.asker = asker
        self.id = id

    async def answer(self, card: Card) -> Reply:
        answer = await self.asker.ask(facts=bullet_list(card.facts), question=card.question)
        answer.extra["model"] = self.asker.model
        return answer


def create(cfg: DictConfig, *, domain: Any, gateway: Any) -> RawLLM:
    sid = system_id(cfg)
    return RawLLM(Asker(cfg, gateway, tag=f"epistemic/{sid}", fields=FIELDS), sid)
