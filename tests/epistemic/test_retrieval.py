"""BM25 scores checked by hand on a three-document corpus."""

from __future__ import annotations

import math

from audit.epistemic.retrieval import BM25Index, fact_index, tokenize


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("Sugar Creek (Caddo County, Oklahoma) has mouth X.") == [
        "sugar", "creek", "caddo", "county", "oklahoma", "has", "mouth", "x"]


def test_bm25_score_by_hand():
    index = BM25Index(["a b", "a c c", "d"])  # N=3, lengths 2,3,1, avg 2
    idf_c = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm = 1.5 * (1 - 0.75 + 0.75 * 3 / 2)
    expected = idf_c * 2 * 2.5 / (2 + norm)
    scores = index.scores("C?")
    assert scores[0] == 0 and scores[2] == 0 and math.isclose(scores[1], expected)
    assert index.search("c", 5) == [(1, scores[1])]
    assert index.search("zzz", 5) == [] and index.search("c", 0) == []


def test_ties_break_by_document_order_and_duplicates_drop():
    index = fact_index(["x river", "y river", "x river", "z lake"])
    assert len(index) == 3
    assert index.top("river", 2) == ["x river", "y river"]
    assert index.top("x", 3) == ["x river"]
