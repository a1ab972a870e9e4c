"""The model gateway: the only place where model calls happen.

``Gateway.chat`` (chat API: auditor, judge, LLM systems) and ``Gateway.complete`` (raw
``/completions`` for user-persona sampling) route through litellm to OpenRouter or any
OpenAI-compatible server, with retries, a persistent cache, bounded concurrency and a
cost ledger owned here (litellm's own are unreliable; docs/design.md, "The model gateway"). litellm itself is
imported lazily on the first call.
"""

from audit.llm.types import GatewayError, LLMResponse, Usage

__all__ = ["GatewayError", "LLMResponse", "Usage"]
