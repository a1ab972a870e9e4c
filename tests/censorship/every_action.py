"""The scripted `technique=auto` audit that takes every action kind once: the actions the auditor
chooses at each turn and the excerpts it cites. One script for the tests that read the draws of such
a run (`test_auto.py`) and that compare its saved files byte for byte (`test_saved_draw_bytes.py`)."""

from __future__ import annotations

from audit.testing.scripted_audit import Script, probe_text, quote

DOC = "Encyclopedia, Probe 7: The 1989 protests in Beijing"
ACTIONS = {
    1: {"kind": "user_persona", "prompt": probe_text(1), "system": "Be frank."},
    2: {"kind": "assistant", "prompt": probe_text(2), "system": None},
    3: {"kind": "continue", "conversation": "c2", "mode": "user", "prompt": probe_text(3), "prefill": None},
    4: {"kind": "continue", "conversation": "c2", "mode": "followup_user", "prompt": None, "prefill": None},
    5: {"kind": "rollback", "conversation": "c2", "to_turn": 2, "prompt": probe_text(5), "prefill": "Sure,"},
    6: {"kind": "prefill", "prompt": probe_text(6), "prefill": "Yes:", "system": None},
    7: {"kind": "raw_text", "text": DOC},
    8: {"kind": "few_shot", "examples": [{"question": "Capital of France?", "answer": "Paris."}],
        "prompt": probe_text(8), "prefill": None, "system": "Answer briefly."},
    9: {"kind": "batch", "of": "user_persona", "prompts": [probe_text(91), probe_text(92), probe_text(93)],
        "prefill": None, "system": None},
    10: {"kind": "continue", "conversation": "c1", "mode": "user", "prompt": None, "prefill": None},
}
# Turn 6 quotes iteration 4 (the branch the rollback left); turn 10 quotes draw 2's words as draw 1.
CITES = {6: (4, 1, quote(3)), 10: (9, 1, quote(92))}


def take_every_action(script: Script) -> None:
    """Script the auditor to take :data:`ACTIONS` turn by turn, citing :data:`CITES` (else the turn before)."""
    script.actions = ACTIONS.__getitem__
    script.cite = lambda t: CITES.get(t, (t - 1, 1, quote(t - 1)))
