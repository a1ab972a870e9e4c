"""Which providers stop generating, and billing, when a streamed call is cut off.

OpenRouter's API reference, "Streaming", section "Stream Cancellation" (repository
OpenRouterTeam/docs; openrouter.ai/docs/api-reference/streaming): "Streaming requests can be
cancelled by aborting the connection. For supported providers, this immediately stops model
processing and billing", followed by the two lists below; and "For non-streaming requests or
unsupported providers, the model will continue processing and you will be billed for the complete
response". A provider on neither list is taken as not stopping: the estimate errs towards paying.
"""

from __future__ import annotations

STOPS_ON_CANCEL = frozenset(name.lower() for name in (
    "OpenAI", "Azure", "Anthropic", "Fireworks", "Mancer", "Recursal", "AnyScale", "Lepton", "OctoAI",
    "Novita", "DeepInfra", "Together", "Cohere", "Hyperbolic", "Infermatic", "Avian", "XAI", "Cloudflare",
    "SFCompute", "Nineteen", "Liquid", "Friendli", "Chutes", "DeepSeek"))
"""The "Supported" list. The "Not Currently Supported" one names, among others, AWS Bedrock, Groq,
Google, Google AI Studio, Minimax, Mistral, Alibaba, Nebius, SambaNova and Lambda."""


def stops_billing(provider: str | None) -> bool:
    """Whether cutting off a stream served by ``provider`` (the name OpenRouter gives in the reply's
    ``provider`` field) ends its billing there; False for an unknown or unnamed provider."""
    return bool(provider) and str(provider).strip().lower() in STOPS_ON_CANCEL
