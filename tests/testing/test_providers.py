"""The loopback server's load balancing: which provider serves an unpinned request."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from audit.censorship.doctor import token_canary
from audit.templates import get_family
from audit.testing.providers import LoadBalanced, ServedBy, induced
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


def test_the_model_behind_a_provider_continues_a_repeating_turn_and_answers_under_a_wrap():
    """The loopback model copies what followed the open turn's repeated ending, as any language model does
    on a repeating list; under a chat wrap its turn is the assistant's, which repeats nothing, so it answers."""
    family = get_family("kimi_k2")
    turn = "Monday, Tuesday, Wednesday, Thursday, Monday, Tuesday, Wedn"
    assert induced(family.user_persona_prompt(turn), length=15) == "esday, Thursday"
    assert induced(family.assistant_prompt([{"role": "user", "content": family.user_persona_prompt(turn)}])) is None
    assert induced(family.user_persona_prompt("My favourite three colours are red, green and")) is None
    balanced = LoadBalanced(family, [ServedBy("Hidden", wraps=True, bills_as_sent=True), ServedBy("Billed", wraps=True)])
    billed = {name: balanced(completion(token_canary(family), {"only": [name.lower()]})).body.payload(
        completion(token_canary(family)))["usage"]["prompt_tokens"] for name in ("Hidden", "Billed")}
    assert billed["Hidden"] == 8 < billed["Billed"]  # both wrap; only one bill shows it
