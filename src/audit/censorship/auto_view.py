"""What the auditor is shown after a ``technique=auto`` action (pure: texts from ``prompts/auto_*.txt``).

A single draw is shown whole (as a fixed technique's response: the target's text, after the
auditor's prefill if any), fenced as untrusted data, after the earlier turns of its branch, which
is the conversation's *active* branch (a branch left by a rollback is in the record, not in the
auditor's view, as it is not in the target's prompt). A batch is shown as a digest,
one line per draw with the start of its text; the full texts are in the response file. A ``reopen``
action draws nothing: the message shows the draws of the iteration it names again, whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.censorship.action_kinds.reopen import KIND as REOPEN_KIND, drawn
from audit.censorship.conversations import Tree
from audit.censorship.progress import preview
from audit.censorship.prompts import fill, load, shown_response
from audit.fence import untrusted
from audit.record.draws import Draw, drawn_text

DIGEST_CHARS = 160
"""How much of each batch draw the digest shows (a batch of 8 stays near one screen)."""
REOPEN = REOPEN_KIND.name
THREAD_CHARS = 200
"""How much of each earlier turn a conversation's thread shows (the new draw is shown whole after it)."""


def auto_turn_message(iteration: int, action: Mapping[str, Any], draws: Sequence[Draw], tree: Tree,
                      draws_left: int) -> str:
    """The user message that hands action ``iteration``'s draws to the auditor (turn ``iteration + 1``);
    ``tree`` includes those draws."""
    if action["kind"] == REOPEN:  # no draw: the asked iteration's draws again, as first shown
        shown = int(action["iteration"])
        body = "".join(thread_block(tree, d) + draw_block(shown, d) for d in drawn(tree, shown))
        return fill(load("turn_reopen"), iteration=iteration, next_iteration=iteration + 1, shown=shown,
                    draws=body, draws_left=max(draws_left, 0))
    if action["kind"] == "batch":
        body = batch_digest(iteration, str(action["of"]), draws)
    else:
        body = "".join(thread_block(tree, d) + draw_block(iteration, d) for d in draws)
    return fill(load("turn_auto"), iteration=iteration, next_iteration=iteration + 1, action=action["kind"],
                draws=body, draws_left=max(draws_left, 0))


def draw_block(iteration: int, draw: Draw) -> str:
    """One draw whole (a failure said to be one), with its technique and place in the tree."""
    place = f", conversation {draw.conversation}, branch {draw.branch}" if draw.conversation else ""
    response = shown_response(drawn_text(draw), draw.error, draw.blocked_by)
    return fill(load("auto_draw"), iteration=iteration, draw=str(draw.id).split(".")[-1],
                technique=draw.technique, place=place, response=response)


def batch_digest(iteration: int, technique: str, draws: Sequence[Draw]) -> str:
    """A batch as one line per draw: its number, length and the start of its text."""
    lines = []
    for draw in draws:
        text = drawn_text(draw)
        shown = preview(shown_response(text, draw.error, draw.blocked_by), DIGEST_CHARS)
        lines.append(fill(load("auto_batch_line"), draw=str(draw.id).split(".")[-1], chars=len(text or ""),
                          preview=shown))
    return fill(load("auto_batch"), n=len(draws), technique=technique, iteration=iteration, lines="\n".join(lines))


def thread_block(tree: Tree, draw: Draw) -> str:
    """The turns of ``draw``'s branch before it, as the target saw them, one line per turn ("" when
    the draw started its conversation; the draw itself is shown whole after it)."""
    if not draw.conversation:
        return ""
    earlier = tree.thread(draw.parent)
    if not earlier:
        return ""
    turns = [fill(load("auto_thread_turn"), turn=n, draw=d, role=m["role"], preview=preview(untrusted(m["content"]), THREAD_CHARS))
             for n, (d, m) in enumerate(earlier, start=1)]
    conversation = draw.conversation
    branches = tree.branches(conversation)
    return fill(load("auto_thread"), conversation=conversation, branch=draw.branch,
                branches=f"{len(branches)} ({', '.join(branches)})", turns="\n".join(turns))
