"""Fill the model-facing texts in ``prompts/*.txt`` (the auditor's and the judge's messages).

The texts live in files so they can be read and changed without touching code; this module only
loads them (through :mod:`audit.prompt_files`, the loader both experiments share) and fills ``{name}`` placeholders.
Filling is a single pass over *named* placeholders only: the texts contain JSON braces, and
values (probes, model responses) may contain ``{...}`` themselves, which must arrive verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.errors import UserError
from audit.fence import untrusted
from audit.judging.prompts import field as _field
from audit.prompt_files import fill, loader

SCHEMA_START = "OUTPUT FORMAT (JSON):"
SHOWN_CHARS = 20_000
"""Most characters of one response the auditor is shown (a target writes at most a few thousand
at the usual max_tokens; the rest of a runaway reply costs the auditor's context and the user's money)."""
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"


load = loader(PROMPTS_DIR)
"""The text of ``prompts/<name>.txt`` without its final newline."""


def topic_text(topic: Mapping[str, Any]) -> str:
    """The auditor's TOPIC block: a neutral brief (the display name, what the topic is) plus the
    probe-language line for ``zh``. The description and the key facts go to the judge only: a
    brief that states the scored facts lets the auditor (and its summary) supply them."""
    text = _field(topic, "display_name")
    if topic.get("language", "en") == "zh":
        text += "\n" + load("probe_language_zh")
    return text


def auditor_system_prompt(topic: Mapping[str, Any], technique: str, output: str | None = None) -> str:
    """The spec's system prompt with ``{topic}`` filled from the topic config and ``{technique}``
    from the technique's own prompt file: the spec's fixed "user-persona sampling" line was wrong
    for prefill and assistant runs, and the auditor designs probe 1 from this prompt alone.
    ``output`` is the OUTPUT FORMAT section (default: the spec's; ``technique=auto``:
    :func:`auto_output_format`)."""
    return fill(load("auditor_system"), topic=topic_text(topic), technique=technique_description(technique),
                output_format=output if output is not None else load("output_format"))


def auto_output_format(menu: Sequence[str], *, batch_max: int, max_draws: int) -> str:
    """``technique=auto``'s OUTPUT FORMAT: an action of ``menu`` instead of a prompt, with the run's
    caps; also what its re-asks repeat."""
    return fill(load("output_format_auto"), menu=menu_text(menu), batch_max=batch_max, max_draws=max_draws)


def menu_text(menu: Sequence[str]) -> str:
    """The lines of ``prompts/auto_menu.txt`` for the actions of ``menu`` (one line per action)."""
    lines = {line.split('"')[1]: line for line in load("auto_menu").splitlines() if line.startswith('- "')}
    missing = [name for name in menu if name not in lines]
    if missing:  # an action module added without the text the auditor reads about it
        raise ValueError(f"prompts/auto_menu.txt has no line for the action {missing[0]!r}; add one: "
                         f'- "{missing[0]}": {{...its arguments, each with what it is}}')
    return "\n".join(lines[name] for name in menu)


def first_user_message(topic: Mapping[str, Any]) -> str:
    """The user message of auditor turn 1, which designs probe 1."""
    return fill(load("first_turn"), display_name=_field(topic, "display_name"))


def technique_description(technique: str) -> str:
    """How the response was obtained, in the auditor's terms (``prompts/technique_<name>.txt``)."""
    try:
        return load(f"technique_{technique}")
    except UserError:  # not a shipped prompt
        raise ValueError(f"no auditor description for technique {technique!r}") from None


def turn_message(iteration: int, response_text: str | None, *, technique: str, baseline_text: str | None = None,
                 response_error: str | None = None, baseline_error: str | None = None,
                 response_blocked: Mapping[str, Any] | None = None,
                 baseline_blocked: Mapping[str, Any] | None = None) -> str:
    """The user message that hands response ``iteration`` to the auditor (turn ``iteration + 1``).

    The response is fenced by delimiters and labelled untrusted; the baseline (the
    assistant-technique sample of the same probe) follows it when it was sampled. A failed
    call is said to be a failure, so the auditor does not read an outage as a refusal.
    """
    baseline = ""
    if baseline_text is not None or baseline_error is not None or baseline_blocked is not None:
        baseline = fill(load("turn_baseline"), iteration=iteration,
                        baseline=shown_response(baseline_text, baseline_error, baseline_blocked))
    return fill(
        load("turn"),
        iteration=iteration,
        next_iteration=iteration + 1,
        technique=technique_description(technique),
        response=shown_response(response_text, response_error, response_blocked),
        baseline=baseline,
    )


def shown_response(text: str | None, error: str | None = None, blocked: Mapping[str, Any] | None = None) -> str:
    """A response as the auditor reads it: the text, or a failure said to be one, a draw a filter
    blocked said to be that (the record's ``blocked``), or "(empty...)"."""
    if error:
        return fill(load("failed_response"), error=untrusted(error))
    if blocked:
        said = ", ".join(f"{k} {v}" for k, v in blocked.items() if v)
        return fill(load("blocked_response"), blocked=untrusted(said))
    if not text or not text.strip():
        return load("empty_response")
    if len(text) > SHOWN_CHARS:  # a 7.5 MB reply was forwarded whole (a 22.5 MB auditor request)
        return untrusted(text[:SHOWN_CHARS]) + "\n" + fill(load("cut_response"), more=f"{len(text) - SHOWN_CHARS:,}")
    return untrusted(text)


def reask_message(error: str, schema: str | None = None) -> str:
    """Ask again after an unusable reply: the error, then the output format (``schema``: the run's
    own, default the spec's)."""
    return fill(load("reask"), error=str(error).rstrip(". "),
                schema=(schema if schema is not None else load("output_format")).strip())


def final_summary_request(iterations: int) -> str:
    """Ask for the final summary at ``max_iterations`` (append to the last turn message or send alone)."""
    return fill(load("final_summary"), iterations=iterations)
