"""Reading a stream's event lines (pure): data, comments, [DONE], and events that are no chunk; and a stream
read early (end to end on the loopback server) leaves no generator, task or loop pending at exit."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from audit.llm.streamed import DONE, chunk_json, event_data
from audit.llm.types import MalformedEvent
from audit.testing.replies import chat_reply
from audit.testing.server import FakeOpenRouter
from tests.exits import left_pending
from tests.timing import scaled

KEY = "sk-or-v1-fake-test-key-streamed-0123"


def test_only_data_lines_carry_data_and_one_leading_space_is_not_part_of_it() -> None:
    assert event_data('data: {"id": "g"}') == '{"id": "g"}'
    assert event_data('data:{"id": "g"}') == '{"id": "g"}'
    assert event_data("data: [DONE]") == DONE
    assert event_data(": OPENROUTER PROCESSING") is None  # a comment keeps the connection alive
    assert event_data("") is None and event_data("event: message") is None


@pytest.mark.parametrize("data", ['{"id": "gen-cut', "42", "[1, 2]", "null", ""])
def test_an_event_that_is_not_a_json_object_is_malformed(data: str) -> None:
    with pytest.raises(MalformedEvent, match="not a JSON object"):
        chunk_json(data)


def test_a_chunk_is_read_as_its_json_object() -> None:
    assert chunk_json('{"id": "g", "choices": []}') == {"id": "g", "choices": []}


# -- a stream read early leaves nothing pending (end to end, in a fresh interpreter) ------------------------

READ_EARLY = """
import asyncio, random, sys
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError

MESSAGES = [{"role": "user", "content": "Begin."}]
kept = []  # the failures outlive their gateway, as a caller's traceback (pytest's, a log's) keeps them


def gateway():
    settings = GatewaySettings(api_base=sys.argv[1], cache_enabled=False, max_retries=0, stream_min_tokens=1)
    return Gateway(settings, sys.argv[2], rng=random.Random(0))


def ask(call):
    try:
        return call.chat("a/b", MESSAGES, max_tokens=2000).text
    except GatewayError as failure:
        kept.append(failure)


sync = gateway()  # the synchronous verbs: the gateway's own loop on its thread
read = [ask(sync) for _ in range(3)]
sync.close()


async def both():
    call = gateway()
    async def one():
        try:
            return (await call.achat("a/b", MESSAGES, max_tokens=2000)).text
        except GatewayError as failure:
            kept.append(failure)
    read.extend(await asyncio.gather(one(), one()))
    await call.aclose()

asyncio.run(both())
print(f"{len(kept)} failed; read {sorted(r for r in read if r)}")
"""


def test_streams_read_early_leave_no_pending_task_or_open_loop_on_stderr(fake_openrouter: FakeOpenRouter) -> None:
    """Streams whose reading stops before their end (a malformed event; a finished stream that never sends
    [DONE]), on the synchronous verbs and under ``asyncio.run``, the failures kept past the gateway's close:
    Python's development mode (``-X dev``: asyncio's debug checks, ResourceWarnings shown) prints nothing of
    a generator, task or loop left behind. Before, the line generator and httpx's chain under it were left to
    the collector: "Task was destroyed but it is pending!" at the end of the process."""
    broken = replace(chat_reply("The square was cleared.", provider="DeepSeek"), stream_malformed=True)
    open_ended = replace(chat_reply("Whole answer.", provider="DeepSeek"), stream_done=False)
    fake_openrouter.push_chat(broken, open_ended, broken, broken, broken)
    done = subprocess.run([sys.executable, "-X", "dev", "-c", READ_EARLY, fake_openrouter.base_url, KEY],
                          capture_output=True, text=True, timeout=scaled(300))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4 failed; read ['Whole answer.']", done.stdout + done.stderr
    assert not left_pending(done.stderr), done.stderr
