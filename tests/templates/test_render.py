"""The Jinja environment must behave like Hugging Face's, or rendered prompts drift from training."""

from __future__ import annotations

import re
from importlib.resources import files

import jinja2
import pytest
from jinja2.sandbox import SecurityError

from audit.templates import family_names, get_family
from audit.templates.render import compiled, environment, render


def _render_string(source: str, **variables: object) -> str:
    return environment().from_string(source).render(**variables)


def test_tojson_keeps_non_ascii_and_does_not_html_escape() -> None:
    out = _render_string("{{ x | tojson }}", x={"q": '六四 "<b>&\'"'})
    assert out == '{"q": "六四 \\"<b>&\'\\""}'


def test_tojson_accepts_hf_keyword_arguments() -> None:
    out = _render_string("{{ x | tojson(ensure_ascii=True, indent=1, sort_keys=True) }}", x={"b": "é", "a": 1})
    assert out == '{\n "a": 1,\n "b": "\\u00e9"\n}'


def test_raise_exception_is_a_template_error() -> None:
    with pytest.raises(jinja2.TemplateError, match="roles must alternate"):
        _render_string("{{ raise_exception('roles must alternate') }}")


def test_strftime_now_formats_the_current_time() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", _render_string("{{ strftime_now('%Y-%m-%d') }}"))


def test_trim_and_lstrip_blocks_and_loop_controls() -> None:
    source = "  {% for i in [1, 2, 3] %}\n{% if i == 3 %}{% break %}{% endif %}\n{{ i }};\n  {% endfor %}\n"
    assert _render_string(source) == "1;\n2;\n"


def test_sandbox_is_immutable() -> None:
    with pytest.raises(SecurityError):
        _render_string("{{ xs.append(2) }}", xs=[1])


def test_templates_are_compiled_once() -> None:
    assert compiled("qwen3.jinja") is compiled("qwen3.jinja")


def test_render_passes_messages_and_generation_flag() -> None:
    messages = [{"role": "user", "content": "你好"}]
    assert render("qwen3.jinja", messages, add_generation_prompt=True) == (
        "<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n"
    )


def test_every_packaged_template_belongs_to_a_family() -> None:
    shipped = {p.name for p in (files("audit.templates") / "chat_templates").iterdir() if p.name.endswith(".jinja")}
    used = {get_family(name).template for name in family_names()}
    assert shipped == used
