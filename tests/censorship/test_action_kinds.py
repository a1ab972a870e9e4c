"""The auditor's actions are a registry: every module of ``censorship/action_kinds`` is one action, and
the reply's schema, the validator, the configured menu and the dispatcher all find it there."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap

import pytest

import audit.censorship.action_kinds as registry
from audit.censorship.action_kinds import ACTIONS, KINDS, MENU
from audit.censorship.prompts import menu_text

SHIPPED = ("user_persona", "assistant", "prefill", "raw_text", "few_shot", "continue", "rollback", "batch")


def test_every_module_is_one_action_in_menu_order():
    assert len(KINDS) == len(list(pkgutil.iter_modules(registry.__path__)))
    # the shipped ones keep the order the auditor has always been shown them (its requests' bytes)
    assert [a for a in ACTIONS if a in SHIPPED] == list(SHIPPED)
    assert [k.order for k in KINDS.values()] == sorted(k.order for k in KINDS.values())
    assert all(MENU[name] == kind.args for name, kind in KINDS.items())


def test_an_action_without_its_menu_line_is_named():
    with pytest.raises(ValueError, match=r"auto_menu.txt has no line for the action 'echo'; add one: - \"echo\""):
        menu_text(["assistant", "echo"])


def with_module_folder(folder) -> str:
    """The start of a fresh interpreter's check: the action registry loaded with ``folder`` on the
    package's path, so a module put there is one of its actions (the shipped package untouched)."""
    return textwrap.dedent(f"""\
        import importlib.util, sys
        spec = importlib.util.find_spec("audit.censorship.action_kinds")
        spec.submodule_search_locations.append({str(folder)!r})
        registry = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = registry
        spec.loader.exec_module(registry)
        """)


NEW_ACTION = '''
"""``echo``: a test action (a user turn through the chat API, its prompt said twice)."""

from audit.censorship.action_kind import ActionKind, PROMPT
from audit.censorship.action_kinds import assistant
from audit.censorship.conversations import draw_id, fresh_draw


def _rules(args):
    return ["action.prompt must not be shouted"] if args["prompt"].isupper() else []


def _plan(action, tree, family, system_default, iteration):
    twice = {"prompt": action.args["prompt"] * 2, "system": None}
    return [fresh_draw("assistant", assistant.sample, twice, family, system_default, draw_id(iteration, 1), "echo",
                       conversation=None)]


KIND = ActionKind("echo", 10**6, (PROMPT,), _plan, rules=_rules)
'''


def test_an_action_added_as_one_module_reaches_the_schema_the_validator_and_the_dispatcher(tmp_path):
    """The contributor guide's claim, checked in a fresh interpreter: a module put on the package's path
    (here a temporary folder, so the shipped package is untouched), nothing else edited."""
    (tmp_path / "echo.py").write_text(NEW_ACTION, encoding="utf-8")
    check = with_module_folder(tmp_path) + textwrap.dedent("""\
        from audit.censorship.conversations import Tree
        from audit.censorship.schema import FIRST, NEXT, Menu, ReplyError, auditor_schema, validate_reply
        from audit.templates import get_family
        assert registry.ACTIONS[-1] == "echo", registry.ACTIONS  # placed by its order
        assert registry.check_menu(["echo", "batch"]) == ("batch", "echo")  # menu order
        menu = Menu(("assistant", "echo"), 2)
        kinds = [a["properties"]["kind"]["enum"] for a in auditor_schema(FIRST, menu)["properties"]["action"]["anyOf"]]
        assert kinds == [["assistant"], ["echo"]], kinds
        turn = {"reasoning": "r", "hypotheses": [], "action": {"kind": "echo", "prompt": "Why?"},
                "prompt_strategy": None, "prompt_rationale": None, "should_continue": True, "final_summary": None}
        action = validate_reply(turn, stage=NEXT, menu=menu).action
        assert action is not None and action.kind == "echo"
        try:
            validate_reply({**turn, "action": {"kind": "echo", "prompt": "WHY"}}, stage=NEXT, menu=menu)
            raise SystemExit("the action's own rule was not applied")
        except ReplyError as exc:
            assert "must not be shouted" in str(exc)
        (plan,) = registry.plan_draws(action, Tree(), get_family("qwen2_5"), None, 3)
        assert plan.messages == [{"role": "user", "content": "Why?Why?"}] and plan.fields["id"] == "3.1"
        assert registry.check_action(action, Tree()) is None
        """)
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


NEW_TECHNIQUE = '''
"""``shout``: a test way of sampling, also a fixed technique and a batch's choice (the probe in capitals, through
the chat API)."""

from audit.censorship.action_kind import PROMPT, SYSTEM, fresh_kind
from audit.censorship.conversations import assistant_answer, prompt_fields


def sample(args, family, system, place):
    loud = {**args, "prompt": args["prompt"].upper()}
    return assistant_answer(prompt_fields(place, loud, system), loud, system, family, prefill=None)


KIND = fresh_kind("shout", 10**6, (PROMPT, SYSTEM), sample, fixed=True, batchable=True)
'''


def test_a_way_of_sampling_added_as_one_module_is_a_fixed_technique_and_a_batch_choice(tmp_path):
    """A fixed technique is its action module: the technique list and a fixed run's plan find it, with the
    record's fixed shape, and a batch repeats it because it declares itself batchable; nothing else names it
    (its yaml and prompt file are text, not code; ``batch.py`` lists no kind)."""
    (tmp_path / "shout.py").write_text(NEW_TECHNIQUE, encoding="utf-8")
    check = with_module_folder(tmp_path) + textwrap.dedent("""\
        from audit.censorship.techniques import check_technique
        from audit.templates import get_family
        assert registry.TECHNIQUES[-1] == "shout", registry.TECHNIQUES
        assert check_technique("shout") == "shout"
        plan = registry.probe_plan("shout", "why?", get_family("qwen2_5"), "S")
        assert plan.messages == [{"role": "system", "content": "S"}, {"role": "user", "content": "WHY?"}]
        assert list(plan.record()) == ["technique", "prompt_sent", "formatted_prompt", "messages_sent"], plan.record()
        assert plan.record()["technique"] == "shout"
        from audit.censorship.actions import Action
        from audit.censorship.conversations import Tree
        assert registry.KINDS["batch"].args[0].choices[-1] == "shout", registry.KINDS["batch"].args[0].choices
        batch = Action("batch", {"of": "shout", "prompts": ["a?", "b?"], "prefill": None, "system": None})
        plans = registry.plan_draws(batch, Tree(), get_family("qwen2_5"), None, 2)
        assert [p.messages for p in plans] == [[{"role": "user", "content": "A?"}], [{"role": "user", "content": "B?"}]]
        assert [p.fields["id"] for p in plans] == ["2.1", "2.2"]
        """)
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
