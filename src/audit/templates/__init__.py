"""Chat templates for raw /completions prompts: user-persona prefixes, chat and prefill prompts.

``get_family(name)`` returns a :class:`TemplateFamily` that renders a model's official chat
template (shipped in ``chat_templates/``) exactly as Hugging Face does, and names the stop
sequences that end a user turn; ``cut_at_stops`` applies them to returned text.
"""

from audit.templates.families import TemplateFamily, cut_at_stops, family_names, get_family, split_run_on

__all__ = ["TemplateFamily", "cut_at_stops", "family_names", "get_family", "split_run_on"]
