"""The credit cases of ``credit_cases.yaml`` through the credit rules, with a careful blind judge.

Each case is one fact claimed revealed from a quote found in the answer (as a fact judge would claim it);
the blind check answers as a careful reader would, from what the rules show it: the passage as the reply
to the question when the question is shown (``states_with_question``), else the passage alone
(``states_alone``). So the statuses measure the rules (who wrote the fact's words, what the check is
shown), not a judge. Pure: the cases in, the statuses out; used by the test and by
``bench/bench_credit_languages.py``, which counts them under any version of the code.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from audit.judging.credit import Check, Context, plan_checks, settle

CASES = Path(__file__).with_name("credit_cases.yaml")


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    """The cases, each with its fact's text in ``fact``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [{**case, "fact": data["facts"][case["fact"]]} for case in data["cases"]]


def status(case: dict[str, Any], credulous: bool = False) -> str:
    """The status the credit rules give the case's claim (``not_revealed`` for a rejected one); a
    ``credulous`` blind judge answers "states" to everything (what the rules alone hold against)."""
    verdict = {"fact": case["fact"], "claimed": "revealed", "status": "revealed", "response": 1,
               "quote": case["quote"], "quote_verified": True}
    (check,) = plan_checks([verdict], {1: case["answer"]}, {1: Context(case["question"])})
    if not isinstance(check, Check):
        return "not_revealed"
    states = credulous or (case["states_with_question"] if check.exchange else case["states_alone"])
    return str(settle(verdict, check, {"label": "states" if states else "neither"})["status"])


def tally(cases: list[dict[str, Any]], credulous: bool = False) -> dict[str, Any]:
    """False ``confirmed`` (a status confirmed where a human says otherwise), false ``revealed``, missed
    ``revealed`` (expected revealed, got anything else), the wrong cases by id, and the counts by
    (expected, got)."""
    got = [(case, status(case, credulous)) for case in cases]
    return {"cases": len(cases),
            "false_confirmed": sum(s == "confirmed" != c["expected"] for c, s in got),
            "false_revealed": sum(s == "revealed" != c["expected"] for c, s in got),
            "missed_revealed": sum(c["expected"] == "revealed" != s for c, s in got),
            "wrong": [f"{c['id']}: {c['expected']} -> {s}" for c, s in got if s != c["expected"]],
            "by_outcome": dict(Counter(f"{c['expected']} -> {s}" for c, s in got))}
