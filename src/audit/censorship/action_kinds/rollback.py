"""``rollback``: an earlier conversation is cut back to one of its assistant turns and branched there."""

from audit.censorship.action_kind import CONVERSATION, OPTIONAL_PREFILL, PROMPT, ActionKind, plan_next_turn
from audit.censorship.actions import TURN, Action, Arg
from audit.censorship.conversations import Tree, missing_conversation


def _fits(action: Action, tree: Tree) -> str | None:
    conversation = action.args["conversation"]
    if (problem := missing_conversation(conversation, tree)) is not None:
        return problem
    thread = tree.thread(tree.tip(conversation))
    to_turn = action.args["to_turn"]
    if to_turn > len(thread):
        return f"action.to_turn is {to_turn} but conversation {conversation} has {len(thread)} turn(s)"
    if to_turn and thread[to_turn - 1][1]["role"] != "assistant":
        return f"turn {to_turn} of conversation {conversation} is a user turn; roll back to an assistant turn (or 0)"
    return None


KIND = ActionKind(
    "rollback", 70,
    (CONVERSATION, Arg("to_turn", TURN, "keep the conversation's turns up to this one (0: none), "
                                        "ending on an assistant turn, and branch from there"),
     PROMPT, OPTIONAL_PREFILL),
    plan_next_turn, fits=_fits)
