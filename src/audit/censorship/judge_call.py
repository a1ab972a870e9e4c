"""One judge call through the gateway, its failure recorded rather than raised.

The audit loop (``Audit._judge``) and ``audit.judge_check`` judge the same way: the messages and
the reply parser come from :mod:`audit.censorship.judging` (prompts in files), the call goes
through the one gateway with the judge's model, endpoint, limits and structured-output mode, and a
failed call or an unusable reply becomes ``{"label": None, "error": ...}`` so that the caller can
count it as a judge failure. An unusable reply is dropped from the response cache, so a resume
asks the judge afresh instead of replaying it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from audit.censorship.accounting import call_usage
from audit.llm.settings import role_endpoint
from audit.llm.types import GatewayError


async def call_judge(gateway: Any, judge: Mapping[str, Any], messages: list[dict[str, Any]],
                     parse: Callable[[str], dict[str, Any]], response_format: Mapping[str, Any]) -> dict[str, Any]:
    """The parsed reply plus ``raw_response`` and ``usage``; on failure ``label`` None and ``error``."""
    try:
        response = await gateway.achat(str(judge["model"]), messages, max_tokens=judge.get("max_tokens"),
                                       temperature=judge.get("temperature"), tag="judge",
                                       endpoint=role_endpoint(judge), response_format=response_format,
                                       structured=str(judge.get("structured_output", "auto")))
    except GatewayError as exc:
        return {"label": None, "error": str(exc), "usage": None}
    usage = call_usage(response)
    try:
        result = parse(response.text)
    except ValueError as exc:
        gateway.forget(response)  # never served again from the cache: a rerun asks afresh
        return {"label": None, "error": str(exc), "raw_response": response.text, "usage": usage}
    return {**result, "raw_response": response.text, "usage": usage}
