"""The credit check of one fact scoring: every claimed fact's blind question asked, the verdicts settled.

The rules are :mod:`audit.judging.credit`; the question is :mod:`audit.judging.entailment`;
this module only asks (through the caller's judge, one call or a panel) and puts the answers back.
A judge panel's members each claimed their own quotes, so each member's verdicts are checked and
the panel's majority is taken afterwards (``recombine``): a member's claim that the check rejects
is that member's vote for ``not_revealed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from audit.record.usage import Usage
from audit.judging.credit import Check, Context, plan_checks, settle
from audit.judging.entailment import entailment_messages

Ask = Callable[[list[dict[str, str]]], Awaitable[dict[str, Any]]]
OnCheck = Callable[[int, int], None]
"""Told ``(done, total)`` as the checks start (0) and as each one ends: the caller's progress lines."""


async def check_credits(result: Mapping[str, Any], responses: Mapping[int, str], contexts: Mapping[int, Context],
                        ask: Ask, recombine: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None,
                        on_check: OnCheck | None = None) -> dict[str, Any]:
    """``result`` (a fact-scoring judgment: ``facts``, or a panel's with ``judgments``) with every
    claimed fact checked; the checks' usage is added to ``usage`` and their number is ``credit_checks``.
    A failed scoring (no ``facts``) is returned as it is. ``on_check`` hears of each check as it ends
    (the checks run at once, so they end in any order): on a slow judge they take as long as the
    scoring call itself, and a user must see them advance."""
    if result.get("facts") is None:
        return dict(result)
    panel = "judgments" in result and recombine is not None
    judgments = [dict(j) for j in result["judgments"]] if panel else [dict(result)]
    lists: list[Sequence[Mapping[str, Any]]] = [j.get("facts") or [] for j in judgments]
    plans = [plan_checks(verdicts, responses, contexts) for verdicts in lists]
    unique = list(dict.fromkeys(c for plan in plans for c in plan if isinstance(c, Check)))
    ended = 0

    async def counted_ask(messages: list[dict[str, str]]) -> dict[str, Any]:
        nonlocal ended
        try:
            return await ask(messages)
        finally:
            ended += 1
            if on_check is not None:
                on_check(ended, len(unique))

    if on_check is not None and unique:
        on_check(0, len(unique))
    answers = dict(zip(unique, await asyncio.gather(*(counted_ask(entailment_messages(c)) for c in unique))))
    for judgment, verdicts, plan in zip(judgments, lists, plans):
        if judgment.get("facts") is not None:
            judgment["facts"] = [settle(v, c, answers.get(c) if isinstance(c, Check) else None)
                                 for v, c in zip(verdicts, plan)]
    out = recombine(judgments) if panel else judgments[0]
    out["usage"] = Usage.total([result.get("usage"), *(a.get("usage") for a in answers.values())]).as_dict()
    out["credit_checks"] = len(unique)
    return out
