"""Offline lexical retrieval (Okapi BM25) over verbalised KG facts, for the RAG systems.

Why BM25 and not embeddings: the corpus is short entity-heavy sentences ("Escanaba River
has mouth Lake Michigan."), where exact name overlap is what finds the relevant facts, and
it needs no model download (the machine is offline). numpy only, no scipy: each term keeps
a postings array (doc ids, term frequencies), and a query touches only its terms' postings.

Scoring: idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (always positive, so very common
words such as "has" or "mouth" only add little instead of subtracting), and
tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)) per term.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscore; punctuation splits)."""
    return TOKEN.findall(text.lower())


class BM25Index:
    """An in-memory BM25 index over a fixed list of documents."""

    def __init__(self, docs: Iterable[str], *, k1: float = 1.5, b: float = 0.75):
        self.docs: list[str] = list(docs)
        self.k1, self.b = k1, b
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = np.zeros(len(self.docs), dtype=np.float64)
        for i, doc in enumerate(self.docs):
            counts = Counter(tokenize(doc))
            lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(i)
                tfs.append(tf)
        n = len(self.docs)
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        # Per-document length normaliser, precomputed once: k1 * (1 - b + b * len / avg).
        self._norm = k1 * (1 - b + b * lengths / avg)
        self._postings = {
            term: (np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float64),
                   math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5)))
            for term, (ids, tfs) in postings.items()
        }

    def __len__(self) -> int:
        return len(self.docs)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (0 where no query term occurs)."""
        out = np.zeros(len(self.docs), dtype=np.float64)
        for term in set(tokenize(query)):
            hit = self._postings.get(term)
            if hit is None:
                continue
            ids, tfs, idf = hit
            out[ids] += idf * tfs * (self.k1 + 1) / (tfs + self._norm[ids])
        return out

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (doc index, score) pairs with a positive score, best first.

        Ties break by document order so a run is reproducible.
        """
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        if k <= 0 or hits.size == 0:
            return []
        order = np.lexsort((hits, -scores[hits]))[:k]
        return [(int(hits[i]), float(scores[hits[i]])) for i in order]

    def top(self, query: str, k: int) -> list[str]:
        """The texts of the ``k`` best documents for ``query``."""
        return [self.docs[i] for i, _ in self.search(query, k)]


def fact_index(sentences: Sequence[str]) -> BM25Index:
    """Index verbalised facts, dropping duplicates (same sentence from two IRIs) in order."""
    return BM25Index(dict.fromkeys(sentences))
