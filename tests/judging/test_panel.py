"""The panel a judge node describes (``judge.models``, ``judge.samples``): members, names, bad input."""

from __future__ import annotations

import pytest

from audit.errors import UserError
from audit.judging.panel import panel_from_node

JUDGE = {"enabled": True, "model": "x/judge", "temperature": 0.0, "max_tokens": 1024, "endpoint": "openrouter",
         "structured_output": "auto", "models": None, "samples": 1}


def test_the_single_judge_is_a_panel_of_one_judged_once():
    panel = panel_from_node(JUDGE)
    assert panel is not None and panel.single and panel.names == ["x/judge"]
    assert panel.members[0][1] == {k: JUDGE[k] for k in ("model", "endpoint", "temperature", "max_tokens",
                                                         "structured_output")}
    assert not panel_from_node({**JUDGE, "samples": 2}).single
    assert panel_from_node({**JUDGE, "enabled": False}) is None and panel_from_node({**JUDGE, "model": None}) is None


def test_members_take_the_judge_defaults_and_same_model_members_are_told_apart():
    panel = panel_from_node({**JUDGE, "models": ["a/m", {"model": "b/m", "endpoint": "local", "temperature": 0.7},
                                                 {"model": "a/m", "temperature": 1.0}], "samples": 3})
    assert panel.names == ["a/m#1", "b/m", "a/m#3"] and panel.samples == 3
    assert panel.members[0][1]["max_tokens"] == 1024 and panel.members[1][1]["endpoint"] == "local"
    assert panel.endpoints() == ["openrouter", "local"]
    assert panel.describe()["members"][1] == {"name": "b/m", "model": "b/m", "endpoint": "local",
                                              "temperature": 0.7, "max_tokens": 1024, "structured_output": "auto"}


@pytest.mark.parametrize(("change", "message"), [
    ({"models": []}, "judge.models=[] is empty"),
    ({"samples": 0}, "judge.samples=0: give a whole number of at least 1"),
    ({"samples": "two"}, "judge.samples='two'"),
    ({"models": "a/m"}, "judge.models='a/m': give a list"),
    ({"models": ["a/m", "a/m"]}, "judge.models[0] and judge.models[1] are the same judge"),
    ({"models": [{"model": "a/m", "temperature": 9}]}, "judge.models[0].temperature=9"),
    ({"models": [{"model": "a/m", "effort": "high"}]}, "judge.models[0]: unknown setting 'effort'"),
    ({"models": [{"endpoint": "local", "model": ""}]}, "judge.models[0] has no model"),
    ({"models": [{"model": "a/m", "structured_output": "maybe"}]}, "structured_output must be one of"),
    ({"models": [3]}, "judge.models[0]=3"),
])
def test_bad_panels_are_one_line_naming_the_key(change, message):
    with pytest.raises(UserError) as caught:
        panel_from_node({**JUDGE, **change})
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_embedded_model_serves_one_judge_so_local_refuses_a_panel_of_models():
    with pytest.raises(UserError, match="judge.models cannot be served"):
        panel_from_node({**JUDGE, "models": ["a/m", "b/m"]}, local=True)
    assert panel_from_node({**JUDGE, "samples": 3}, local=True).samples == 3
