"""The litellm boundary's one-time setup (:func:`audit.llm.backend.litellm`)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from audit.llm import backend

FROZEN = """
import gc
from audit.llm import backend
module = backend.litellm()
print(gc.get_freeze_count(), any(obj is module.model_cost for obj in gc.get_objects()))
"""


def test_litellm_s_import_time_objects_are_frozen_out_of_the_collector_s_walks():
    """Every full collection walked litellm's ~400,000 import-time objects again (0.3 s of CPU each,
    one every ~500 calls at 128 in flight); frozen, the collector no longer sees them. A fresh
    interpreter: in this one another test's ``long_lived_heap`` block may have unfrozen them."""
    out = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 100_000
    assert out[1] == "False"  # litellm's price map is out of the collector's generations


def _raw_reply(model: str, cost: float | None) -> Any:
    """A ``/completions`` reply as litellm's raw route hands it to its cost calculator."""
    from litellm.types.utils import TextCompletionResponse

    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, **({} if cost is None else {"cost": cost})}
    return TextCompletionResponse(id="gen-1", object="text_completion", created=1, model=model, usage=usage,
                                  choices=[{"text": " yes", "index": 0, "finish_reason": "stop"}])


def test_litellm_prices_a_raw_reply_by_the_declared_zero_entry():
    """The zero entry is what ends litellm's price search on the raw route only if it sits under the key
    litellm looks up (its documented ``get_model_info`` and ``completion_cost``). A model never declared is
    unmapped (the search runs on every call); once declared, both the route-prefixed id and the reply's
    echoed ``model`` under the route's provider land on the entry, and a billed ``usage.cost`` still wins."""
    lib = backend.litellm()
    model = "vendor/declared-in-this-test"
    provider = backend.COMPLETION_ROUTE.rstrip("/")
    route_model = backend.COMPLETION_ROUTE + model
    with pytest.raises(Exception, match="isn't mapped"):
        lib.get_model_info(model, custom_llm_provider=provider)

    backend._declare_unpriced(backend.COMPLETION_ROUTE, model)

    assert lib.get_model_info(model, custom_llm_provider=provider)["key"] == route_model
    assert lib.get_model_info(route_model)["key"] == route_model
    priced = {"model": route_model, "custom_llm_provider": provider, "call_type": "atext_completion"}
    assert lib.completion_cost(completion_response=_raw_reply(model, None), **priced) == 0.0
    assert lib.completion_cost(completion_response=_raw_reply(model, 0.00042), **priced) == 0.00042
