"""The raw-completion check: heuristics, verdicts and the ``python -m audit.doctor`` exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from audit.censorship.doctor import Diagnosis, estimate_tokens, looks_continued, tokens_inflated
from audit.templates import get_family
from audit.testing.replies import completion_reply, error_reply

CANARY = "My favourite three colours are red, green and"


@pytest.mark.parametrize("reply, continued", [
    (" blue.", True), (" yellow, and my friend likes purple", True), ("blue", True),
    ("Blue is a lovely colour!", False), ("It sounds like you like bright colours.", False),
    ("\n\nSure! Here are", False), ("", False), ("   ", False), (" 3 more: blue", True),
])
def test_continuation_heuristic(reply, continued):
    assert looks_continued(reply) is continued


def test_token_estimate_counts_special_tokens_once_and_flags_wrapping():
    prompt = get_family("deepseek_v3").user_persona_prompt(CANARY)
    estimate = estimate_tokens(prompt)
    assert 10 <= estimate <= 16  # BOS + <｜User｜> + 9 words + 2 commas
    assert estimate_tokens("<|im_user|>user<|im_middle|>天安门") == 6
    assert not tokens_inflated(estimate + 3, estimate)
    assert tokens_inflated(3 * estimate + 40, estimate)
    assert not tokens_inflated(0, estimate)  # provider did not report usage


def diagnosis(**kw):
    base = dict(model="m", template="deepseek_v3", provider_requested=None, provider_served="P", prompt="p",
                reply=" blue.", finish_reason="stop", prompt_tokens=12, estimated_tokens=12)
    return Diagnosis(**{**base, **kw})


def test_verdict_and_advice():
    good = diagnosis()
    assert good.honoured and good.report()[-1].startswith("verdict: OK")
    wrapped = diagnosis(reply="Blue!", prompt_tokens=90)
    lines = wrapped.report()
    assert not wrapped.honoured and any(line.startswith("verdict: WRAPPED") for line in lines)
    assert "audited.provider={order:[<provider>],allow_fallbacks:false,require_parameters:true}" in lines[-1]
    assert not diagnosis(prompt_tokens=90).honoured  # continued, but billed as a chat prompt
    assert not diagnosis(reply=None, error="not_found: no endpoint").honoured


def doctor(tmp_path, server, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
    return subprocess.run([sys.executable, "-m", "audit.doctor", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_doctor_exit_codes_against_the_loopback_server(tmp_path, fake_openrouter, cache_root):
    fake_openrouter.push_completion(completion_reply(" blue.", provider="GoodProv"))
    fake_openrouter.push_completion(completion_reply("Blue is a great colour! What else?", provider="ChatProv",
                                                     usage={"prompt_tokens": 120}))
    fake_openrouter.push_completion(error_reply(404, "No endpoints found that support the completions API"))
    ok = doctor(tmp_path, fake_openrouter, "audited=kimi_k2", "audited.provider={order:[GoodProv]}")
    assert ok.returncode == 0, ok.stderr
    assert "served by GoodProv" in ok.stdout and "verdict: OK" in ok.stdout
    request = fake_openrouter.completion_requests()[0]
    family = get_family("kimi_k2")
    assert request.json["prompt"] == family.user_persona_prompt(CANARY)
    assert request.json["stop"] == list(family.stops) and request.json["provider"] == {"order": ["GoodProv"]}
    wrapped = doctor(tmp_path, fake_openrouter, "audited=kimi_k2")
    assert wrapped.returncode == 2 and "verdict: WRAPPED" in wrapped.stdout and "reported 120" in wrapped.stdout
    missing = doctor(tmp_path, fake_openrouter, "audited=glm_4_5")
    assert missing.returncode == 2 and "not_found" in missing.stdout
    assert not any(cache_root.iterdir()) and not (tmp_path / ".cache").exists()  # the check never fills the cache
