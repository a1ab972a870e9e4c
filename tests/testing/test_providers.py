"""The loopback server's load balancing: which provider serves an unpinned request."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from audit.censorship.doctor import token_canary
from audit.templates import get_family
from audit.testing.providers import LoadBalanced, ServedBy
from audit.testing.replies import RecordedRequest


def completion(prompt: str, provider: dict | None = None) -> RecordedRequest:
    body = {"model": "moonshotai/kimi-k2", "prompt": prompt} | ({"provider": provider} if provider else {})
    return RecordedRequest(method="POST", path="/api/v1/completions", headers={}, body=json.dumps(body).encode(),
                           json=body, received_at=0.0, client_port=0)


@pytest.mark.parametrize("seed", range(6))
def test_a_repeated_prompt_reaches_every_provider_whatever_the_arrival_order(seed):
    """The doctor's canaries, four of each kind, arriving in any order (the first order is the one
    that once sent every token canary to one provider and every sentence to the other)."""
    family = get_family("kimi_k2")
    balanced = LoadBalanced(family, [ServedBy("Honest"), ServedBy("Wrapper", wraps=True)])
    sent = [kind for _ in range(4) for kind in (token_canary(family), "Tell me about the sky, it is")]
    if seed:
        random.Random(seed).shuffle(sent)
    served: dict[str, list[str]] = {}
    for prompt in sent:
        served.setdefault(balanced.route(completion(prompt)).name, []).append(prompt)
    assert {name: sorted(prompts) for name, prompts in served.items()} == \
        {name: sorted([token_canary(family)] * 2 + ["Tell me about the sky, it is"] * 2)
         for name in ("Honest", "Wrapper")}


def test_distinct_prompts_go_to_the_providers_in_turn_and_a_pin_wins():
    balanced = LoadBalanced(get_family("kimi_k2"), [ServedBy("A"), ServedBy("B"), ServedBy("C")])
    names = [balanced.route(completion(f"prompt {i}")).name for i in range(6)]
    assert names == list(itertools.islice(itertools.cycle("ABC"), 6))
    assert balanced.route(completion("prompt 0", {"order": ["c"]})).name == "C"
    assert balanced.route(completion("x", {"only": ["Missing"]})) is None
