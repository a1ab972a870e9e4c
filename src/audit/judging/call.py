"""One judge call through the gateway, its failure recorded rather than raised.

The audit loop (``Audit._judge``) and ``audit.judge_check`` judge the same way: the messages and
the reply parser come from :mod:`audit.judging.judge` (prompts in files), the call goes
through the one gateway with the judge's model, endpoint, limits and structured-output mode, and a
failed call or an unusable reply becomes ``{"label": None, "error": ...}`` so that the caller can
count it as a judge failure. An unusable reply is dropped from the response cache, so a resume
asks the judge afresh instead of replaying it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from audit.llm.accounting import call_usage
from audit.judging.panel import Panel
from audit.llm.settings import role_endpoint, role_routing
from audit.llm.types import GatewayError


async def call_judge(gateway: Any, judge: Mapping[str, Any], messages: list[dict[str, Any]],
                     parse: Callable[[str], dict[str, Any]], response_format: Mapping[str, Any]) -> dict[str, Any]:
    """The parsed reply plus ``raw_response`` and ``usage``; on failure ``label`` None and ``error``."""
    result, _ = await judge_vote(gateway, judge, messages, parse, response_format)
    return result


UNUSABLE = "unusable_reply"
"""The error kind of a reply that came back but did not parse (a gateway failure has its own kind)."""


async def judge_vote(gateway: Any, judge: Mapping[str, Any], messages: list[dict[str, Any]],
                     parse: Callable[[str], dict[str, Any]], response_format: Mapping[str, Any], *,
                     sample_index: int = 0) -> tuple[dict[str, Any], str | None]:
    """:func:`call_judge`'s result and, when it failed, the error's kind (the gateway's, or
    :data:`UNUSABLE`). ``sample_index`` makes the k-th sample of one judge a draw of its own (it
    enters the cache key, as a target sample's does); sample 0 is the single judge's call."""
    try:
        response = await gateway.achat(str(judge["model"]), messages, max_tokens=judge.get("max_tokens"),
                                       temperature=judge.get("temperature"), tag="judge",
                                       endpoint=role_endpoint(judge), response_format=response_format,
                                       structured=str(judge.get("structured_output", "auto")),
                                       sample_index=sample_index, cache_prefix=(0,),  # the system prompt
                                       **role_routing(judge, "judge"))
    except GatewayError as exc:
        return {"label": None, "error": str(exc), "usage": None}, exc.kind
    usage = call_usage(response).as_dict()
    try:
        result = parse(response.text)
    except ValueError as exc:
        gateway.forget(response)  # never served again from the cache: a rerun asks afresh
        return {"label": None, "error": str(exc), "raw_response": response.text, "usage": usage}, UNUSABLE
    return {**result, "raw_response": response.text, "usage": usage}, None


async def call_panel(gateway: Any, panel: Panel, messages: list[dict[str, Any]],
                     parse: Callable[[str], dict[str, Any]], response_format: Mapping[str, Any],
                     combine: Callable[[list[dict[str, Any]], list[str], int], dict[str, Any]]) -> dict[str, Any]:
    """Every member of ``panel`` judges the item ``samples`` times (concurrently, each call as
    :func:`judge_vote`); ``combine`` (:mod:`audit.judging.votes`) makes the panel's record. A
    single judge (:attr:`Panel.single`) is one :func:`call_judge`, recorded exactly as before panels."""
    if panel.single:
        return await call_judge(gateway, panel.members[0][1], messages, parse, response_format)
    asks = [(name, settings, s) for name, settings in panel.members for s in range(panel.samples)]
    results = await asyncio.gather(*(judge_vote(gateway, settings, messages, parse, response_format, sample_index=s)
                                     for _, settings, s in asks))
    judgments = [{"member": name, "sample": s, "error_kind": kind, **result}
                 for (name, _, s), (result, kind) in zip(asks, results)]
    return combine(judgments, panel.names, panel.samples)
