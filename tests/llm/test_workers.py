"""The worker count a setting gives, which worker a request goes to, and a reply made in a worker
(the run's side is tested end to end in ``tests/epistemic/test_workers.py``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import replace

import pytest

from audit.errors import UserError
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import Blocked, GatewayError, LLMResponse
from audit.llm.workers import AUTO_MAX, WorkerGateway, route_of, worker_count
from audit.testing import documented
from audit.testing.replies import TEST_API_KEY, chat_reply


@pytest.mark.parametrize(("value", "cores", "expected"), [
    (1, 8, 1), (3, 1, 3), ("auto", 1, 1), ("auto", 2, 2), ("AUTO", 64, AUTO_MAX)])
def test_a_setting_gives_a_worker_count(value, cores, expected):
    assert worker_count(value, cores) == expected


@pytest.mark.parametrize("value", [0, -2, "two", 1.5, True, None])
def test_a_bad_worker_count_is_one_line_naming_the_fix(value):
    with pytest.raises(UserError, match=r"workers=.*whole number.*workers=auto"):
        worker_count(value, 2)


def test_the_same_request_always_goes_to_the_same_worker():
    """Identical requests share one flight in the gateway only inside one process."""
    messages = [{"role": "user", "content": "Is the Elbe in Germany?"}]
    options = {"max_tokens": 5, "tag": "epistemic/raw_llm"}
    first = route_of("acme/m", messages, options, 4)
    assert all(route_of("acme/m", [dict(m) for m in messages], dict(options), 4) == first for _ in range(5))
    spread = {route_of("acme/m", [{"role": "user", "content": f"card {n}"}], options, 4) for n in range(64)}
    assert spread == {0, 1, 2, 3}  # different cards go to every worker


def test_a_reply_made_in_a_worker_reaches_the_caller_and_the_ledger_as_one_made_here(fake_openrouter, tmp_path):
    """A worker sends the whole :class:`LLMResponse` back (pickled) with its call records: who served
    the call, the provider's own finish reason, the reasoning and cached token counts OpenRouter
    documents (API overview, "CompletionsResponse format": ``provider``, ``native_finish_reason``,
    ``usage.completion_tokens_details.reasoning_tokens``, ``usage.prompt_tokens_details.cached_tokens``
    and ``cache_write_tokens``) arrive as the same call made in this process gives them. Over HTTP to
    the loopback server, workers forked from this process as the epistemic run forks its own."""
    fake_openrouter.default_reply = chat_reply(
        '{"answer": "YES"}', provider="DeepInfra", native_finish_reason="end_turn", reasoning="It flows north.",
        reasoning_tokens=9, usage={"prompt_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2}})
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_enabled=False,
                               cache_path=tmp_path / "cache.sqlite")
    messages = [{"role": "user", "content": "Does the Elbe flow into the North Sea?"}]

    def make() -> Gateway:
        return Gateway(settings, TEST_API_KEY)

    async def ask(gateway) -> LLMResponse:
        try:
            return await gateway.achat("acme/m", messages, max_tokens=50, tag="epistemic/raw_llm")
        finally:
            await gateway.aclose()

    here = make()
    local = asyncio.run(ask(here))
    workers = WorkerGateway(make(), make, 2)
    workers.start()
    remote = asyncio.run(ask(workers))

    assert (remote.provider, remote.native_finish_reason, remote.reasoning_tokens) == ("DeepInfra", "end_turn", 9)
    assert (remote.usage.cached_prompt_tokens, remote.usage.cache_write_tokens) == (4, 2)
    assert remote.generation_id and remote.generation_id != local.generation_id  # two generations
    assert same(remote) == same(local)
    (mine,), (theirs,) = here.ledger.records, workers.ledger.records
    assert replace(theirs, usage=replace(theirs.usage, latency_s=0)) == replace(mine, usage=replace(mine.usage, latency_s=0))
    assert theirs.usage.provider == "DeepInfra" and theirs.usage.cached_prompt_tokens == 4


def same(reply: LLMResponse) -> LLMResponse:
    """The reply less what differs between two calls: their timing and their generation's id."""
    return replace(reply, latency_s=0.0, generation_id=None, usage=replace(reply.usage, latency_s=0.0))


def test_a_filter_s_block_made_in_a_worker_reaches_the_caller_with_its_code_provider_and_reason(fake_openrouter,
                                                                                                tmp_path):
    """The typed 400 ``content_policy_violation`` (errors guide, "Typed Error Codes") raised in a worker is the
    same GatewayError here, its ``blocked`` (what a target draw records) included: pickling keeps no keywords."""
    fake_openrouter.default_reply = documented.content_policy()
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_enabled=False,
                               cache_path=tmp_path / "cache.sqlite")
    workers = WorkerGateway(Gateway(settings, TEST_API_KEY), lambda: Gateway(settings, TEST_API_KEY), 2)
    workers.start()

    async def ask() -> None:
        try:
            await workers.achat("acme/m", [{"role": "user", "content": "June 1989?"}], max_tokens=50, tag="target")
        finally:
            await workers.aclose()

    with pytest.raises(GatewayError) as info:
        asyncio.run(ask())
    assert info.value.kind == "content_policy"
    assert info.value.blocked == Blocked("content_policy_violation", "Moonshot AI", "The request was rejected as sensitive")


LANDS_IN_THE_FORK = '''
import os, signal, sys
from audit.jobs.interrupts import sigterm_as_interrupt
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.workers import WorkerGateway
from audit.testing.replies import TEST_API_KEY
import logging  # its fork hooks are Python code, where a handler raising is "Exception ignored"

settings = GatewaySettings(api_base="http://127.0.0.1:9", max_retries=0, cache_enabled=False,
                           cache_path=sys.argv[1])
os.register_at_fork(before=lambda: os.kill(os.getpid(), signal.SIGTERM))  # a SIGTERM as the fork begins
workers = WorkerGateway(Gateway(settings, TEST_API_KEY), lambda: Gateway(settings, TEST_API_KEY), 1)
with sigterm_as_interrupt():
    try:
        workers.start()
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(0)
print("the signal was lost")
'''


def test_a_stop_signal_landing_while_a_worker_is_forked_interrupts_the_run(tmp_path):
    """A SIGTERM sent as the fork begins is handled once the fork is done, as an interrupt the run sees; it
    was handled inside logging's fork hook, where Python drops the interrupt ("Exception ignored") and the
    run went on to exit 0. In a process of its own: a fork hook cannot be removed."""
    done = subprocess.run([sys.executable, "-c", LANDS_IN_THE_FORK, str(tmp_path / "cache.sqlite")],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "interrupted\n", "")
