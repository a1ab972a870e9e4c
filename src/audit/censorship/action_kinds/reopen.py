"""``reopen``: an earlier iteration's draws shown to the auditor again, whole, with no target draw.

Under ``auditor.context=ledger`` the auditor's request leaves older turns out; this action is how it
reads one of them again (and can then quote it: citations are checked against the saved responses
whatever the auditor is shown). The next turn's message shows the draws of that iteration as they
were first shown (``prompts/turn_reopen.txt``); the iteration spends one of ``max_iterations`` but no
target draw.
"""

from audit.censorship.action_kind import ActionKind
from audit.censorship.actions import TURN, Action, Arg
from audit.censorship.conversations import DrawPlan, Tree
from audit.record.draws import Draw
from audit.templates import TemplateFamily


def drawn(tree: Tree, iteration: int) -> list[Draw]:
    """The draws of ``iteration`` in ``tree``, in the order they were drawn."""
    return [d for d in tree.draws.values() if d.iteration == iteration]


def _plan(action: Action, tree: Tree, family: TemplateFamily, system_default: str | None,
          iteration: int) -> list[DrawPlan]:
    return []


def _fits(action: Action, tree: Tree) -> str | None:
    wanted = action.args["iteration"]
    if not drawn(tree, wanted):
        return f"action.iteration is {wanted}, but iteration {wanted} drew nothing to show; name an earlier iteration that did"
    return None


KIND = ActionKind("reopen", 90, (Arg("iteration", TURN, "an earlier iteration whose draws to show again, whole"),),
                  _plan, fits=_fits)
