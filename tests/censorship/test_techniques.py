"""The fixed techniques: the one-action kinds a whole run may sample with."""

from __future__ import annotations

import pytest

from audit.censorship.action_kinds import KINDS
from audit.censorship.techniques import TECHNIQUES, check_technique
from audit.errors import UserError


def test_the_fixed_techniques_are_the_action_kinds_that_say_so():
    assert TECHNIQUES == ("user_persona", "assistant", "prefill")
    assert all(KINDS[t].fixed for t in TECHNIQUES) and not KINDS["batch"].fixed


def test_unknown_technique_is_a_user_error():
    assert check_technique("prefill") == "prefill"
    with pytest.raises(UserError, match="Did you mean 'user_persona'.*Available: assistant, prefill, user_persona"):
        check_technique("userpersona")
