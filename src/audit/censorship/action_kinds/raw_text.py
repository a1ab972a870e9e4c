"""``raw_text``: the target continues a document verbatim, with no chat template (so no conversation)."""

from audit.censorship.action_kind import fresh_kind
from audit.censorship.actions import TEXT, Arg

KIND = fresh_kind("raw_text", 40, (Arg("text", TEXT, "a document the target continues verbatim, with no chat template"),),
                  conversation=False)
