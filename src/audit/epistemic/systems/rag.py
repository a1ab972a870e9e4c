"""RAG: the card's facts plus the top-k verbalised KG facts that BM25 finds for the
question, then the LLM. Retrieval gives the model the knowledge; nothing constrains how
it uses it (that is graph_rag's gate). The retrieved facts are stored in the row."""

from __future__ import annotations

import weakref
from typing import Any

from omegaconf import DictConfig

from audit.epistemic.retrieval import BM25Index, fact_index
from audit.record.answers import Card
from audit.epistemic.systems.base import Reply, system_id
from audit.epistemic.systems.llm import Asker, bullet_list

NEEDS_LLM = True
FIELDS = ("facts", "retrieved", "question")
"""What the user template is filled with (it must place each)."""
# One index per live domain object: rag and graph_rag in one run share it. Keyed by id and
# dropped when the domain is collected, so a sweep whose jobs run in one process (Hydra's
# basic launcher) does not keep every job's graph alive through this cache.
_INDEXES: dict[int, BM25Index] = {}


def domain_index(domain: Any) -> BM25Index:
    """BM25 over every verbalised fact of the domain (built once per domain)."""
    index = _INDEXES.get(id(domain))
    if index is None:
        index = _INDEXES[id(domain)] = fact_index([domain.verbalise(*t) for t in domain.all_facts()])
        weakref.finalize(domain, _INDEXES.pop, id(domain), None)
    return index


class RAG:
    def __init__(self, asker: Asker, index: BM25Index, top_k: int, id: str):
        self.asker, self.index, self.top_k, self.id = asker, index, top_k, id

    async def answer(self, card: Card) -> Reply:
        retrieved = self.index.top(card.question, self.top_k)
        answer = await self.asker.ask(
            facts=bullet_list(card.facts), retrieved=bullet_list(retrieved), question=card.question
        )
        answer.extra.update(model=self.asker.model, retrieved=retrieved)
        return answer


def create(cfg: DictConfig, *, domain: Any, gateway: Any) -> RAG:
    sid = system_id(cfg)
    return RAG(Asker(cfg, gateway, tag=f"epistemic/{sid}", fields=FIELDS), domain_index(domain), int(cfg.top_k), sid)
