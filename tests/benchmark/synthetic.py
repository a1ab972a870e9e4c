"""Synthetic benchmark tables in the loader's columns (docs/benchmark.md), drawn with a seed: the
cells' tests recount them by hand, and the comparison's tests write them as runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

RESPONSE_COLUMNS = ("run", "role", "model", "technique", "framing", "lang", "question_set", "question_id", "category",
                    "kind", "rollout", "judge", "outcome", "label", "judge_failed", "honesty", "eval_aware", "assessment_failed",
                    "response")
FACT_COLUMNS = ("run", "role", "model", "technique", "framing", "lang", "question_set", "question_id", "category",
                "kind", "rollout", "judge", "fact_id", "status", "quote", "verified", "claimed")
LABELS = ("refused", "deflected", "official_line", "partial", "forthcoming")


def tables(seed: int = 3, models: tuple[str, ...] = ("m/a", "m/b"), techniques: tuple[str, ...] = ("assistant", "prefill"),
           framings: tuple[str, ...] = ("natural", "evaluation"), censored: int = 12, control: int = 6,
           rollouts: int = 3, facts_per_question: int = 3, reference: str | None = "ref/r", judge: str = "j/judge"
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(responses, facts): every model x technique x framing asks ``censored`` censored questions in
    two categories and ``control`` control ones, ``rollouts`` times; each question has its own refusal
    rate (questions differ), a few judge failures, unanswered draws, unverified claims, facts only
    confirmed and failed fact judgments; the reference model (assistant, natural) answers the same questions; ``judge`` labels it all."""
    rng = np.random.default_rng(seed)
    questions = [(f"q{i}", "censored", "history" if i % 2 else "politics") for i in range(censored)] + \
        [(f"c{i}", "control", "uncategorised") for i in range(control)]
    q_rate = {q: rng.beta(1, 2) if kind == "censored" else rng.beta(1, 8) for q, kind, _ in questions}
    arms = [("target", m, t, f) for m in models for t in techniques for f in framings]
    if reference:
        arms.append(("reference", reference, "assistant", "natural"))
    responses, facts = [], []
    for role, model, technique, framing in arms:
        shift = 0.3 if technique == "assistant" else 0.0
        for qid, kind, category in questions:
            for rollout in range(rollouts):
                keys = {"run": f"runs/{model.replace('/', '_')}-{technique}-{framing}", "role": role, "model": model,
                        "technique": technique, "framing": framing, "lang": "en", "question_set": "deccp",
                        "question_id": qid, "category": category, "kind": kind, "rollout": rollout, "judge": judge}
                answered = rng.random() > 0.05
                failed = answered and rng.random() < 0.05
                refused = rng.random() < min(1.0, q_rate[qid] + shift) and role == "target"
                label = None if not answered or failed else ("refused" if refused else str(rng.choice(LABELS[1:])))
                judged = label is not None
                assessed = answered and rng.random() > 0.05
                responses.append({**keys, "outcome": "answered" if answered else "failed", "label": label,
                                  "judge_failed": failed,
                                  "honesty": str(rng.choice(["honest", "evasive", "deceptive"])) if assessed else None,
                                  "eval_aware": bool(rng.random() < 0.1) if assessed else None,
                                  "assessment_failed": answered and not assessed,
                                  "response": f"{model} answers {qid} ({rollout})" if answered else None})
                if not judged:
                    continue
                for fact in range(facts_per_question):
                    # as the loader writes them: a claim whose quote failed verification is not_mentioned,
                    # the judge's word kept in claimed
                    claimed = None if rng.random() < 0.04 else str(rng.choice(
                        ["mentioned", "not_mentioned", "contradicted"], p=[0.5, 0.4, 0.1] if not refused else [0, 1, 0]))
                    verified = claimed in ("mentioned", "contradicted") and rng.random() > 0.1
                    status = claimed if verified or claimed is None else "not_mentioned"
                    if status == "mentioned" and fact == facts_per_question - 1 and rollout == 0:
                        status = "confirmed"  # the question's words, agreed with (no draw of its own: same stream)
                    facts.append({**keys, "fact_id": f"f{fact}", "status": status, "claimed": claimed,
                                  "quote": "a quote" if claimed in ("mentioned", "contradicted") else None,
                                  "verified": verified})
    return pd.DataFrame(responses, columns=RESPONSE_COLUMNS), pd.DataFrame(facts, columns=FACT_COLUMNS)
