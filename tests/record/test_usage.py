"""The one usage record: every shape a run dir ever held reads as it, sums add field by field."""

from __future__ import annotations

import pytest

from audit.record.usage import FIELDS, Usage

# What each writer put in a file before the one record (copied from run dirs of earlier versions).
OLD_DRAW = {"prompt_tokens": 120, "completion_tokens": 30, "cost": 0.002, "retries": 1, "calls": 1, "cached_calls": 0,
            "shared_calls": 0, "latency_s": 0.4, "model": "vendor/target", "provider": "Acme"}
OLD_SUMMARY = {"calls": 3, "cached_calls": 1, "shared_calls": 0, "prompt_tokens": 300, "cached_prompt_tokens": 200,
               "cache_write_tokens": 50, "completion_tokens": 60, "cost": 0.01}
OLD_LEDGER_TOTALS = {**OLD_SUMMARY, "retries": 2, "errors": 1, "surrogates_replaced": 0, "latency_s": 1.5}
OLD_BY_TAG = {"calls": 2, "prompt_tokens": 10, "cached_prompt_tokens": 0, "completion_tokens": 4, "cost": 0.5}


@pytest.mark.parametrize("old", [OLD_DRAW, OLD_SUMMARY, OLD_LEDGER_TOTALS, OLD_BY_TAG])
def test_every_old_shape_reads_with_its_numbers(old):
    usage = Usage.of(old)
    for key, value in old.items():
        assert getattr(usage, key) == value
    assert usage.as_dict().items() >= {k: v for k, v in old.items()}.items()


def test_missing_null_and_unreadable_values_are_zero_and_unknown_keys_ignored():
    usage = Usage.of({"prompt_tokens": None, "cost": "n/a", "completion_tokens": "7", "judge_seconds": 3})
    assert (usage.prompt_tokens, usage.cost, usage.completion_tokens) == (0, 0.0, 7)
    assert "judge_seconds" not in usage.as_dict()
    assert Usage.of(None) == Usage() == Usage.of(["not", "a", "mapping"])


def test_a_sum_adds_every_count_and_dollar_and_names_no_model():
    one = Usage(calls=1, prompt_tokens=100, cached_prompt_tokens=80, cost=0.1, cache_saving=0.02, priced_calls=1,
                estimated_calls=1, model="a/x", provider="P")
    two = Usage(calls=1, errors=1, prompt_tokens=5, cost=0.3, model="a/x", provider="P")
    total = Usage.total([one, None, two.as_dict()])
    assert (total.calls, total.errors, total.prompt_tokens, total.cached_prompt_tokens) == (2, 1, 105, 80)
    assert total.cost == pytest.approx(0.4) and total.cache_saving == pytest.approx(0.02)
    assert (total.model, total.provider) == (None, None)
    assert "model" not in total.as_dict() and one.as_dict()["model"] == "a/x"


def test_a_free_reply_keeps_its_tokens_and_drops_its_dollars():
    paid = Usage(calls=1, prompt_tokens=10, completion_tokens=2, cost=0.5, input_cost=0.3, output_cost=0.2,
                 latency_s=1.0, retries=2)
    free = paid.free()
    assert (free.prompt_tokens, free.completion_tokens) == (10, 2)
    assert (free.cost, free.input_cost, free.output_cost, free.latency_s, free.retries) == (0, 0, 0, 0, 0)


def test_the_cache_line_gives_the_share_and_an_estimated_saving_only_when_priced():
    assert Usage(prompt_tokens=100).cache_line() == ""
    unpriced = Usage(prompt_tokens=1000, cached_prompt_tokens=900)
    assert unpriced.cache_line() == "; 900 of 1,000 prompt tokens (90%) read from the provider's prompt cache"
    priced = Usage(prompt_tokens=1000, cached_prompt_tokens=900, cache_saving=0.0243, priced_calls=2, estimated_calls=2)
    assert priced.cache_line().endswith("prompt cache, saving ~$0.0243 (estimate)")


def test_replay_and_sent():
    assert Usage(calls=3, cached_calls=2, shared_calls=1).replay
    assert not Usage(calls=3, cached_calls=2).replay and Usage(calls=3, cached_calls=2).sent == 1
    assert not Usage().replay


def test_as_dict_round_trips():
    usage = Usage(calls=2, cached_calls=1, prompt_tokens=9, cached_prompt_tokens=4, cache_write_tokens=2, cost=0.25,
                  input_cost=0.1, cache_read_cost=0.01, cache_write_cost=0.04, output_cost=0.1, cache_saving=0.03,
                  priced_calls=1, estimated_calls=1, model="m/x")
    assert Usage.of(usage.as_dict()) == usage
    assert set(usage.as_dict()) == set(FIELDS) - {"provider"}
