"""The one definition of a question file, checked before the loader reads it (pure: data in, one line out).

A question file is the user's or someone else's (the testbed's ``test_facts_explicit.json`` has no
license and is fetched by hand), so its values are untrusted like a saved run's: ``"control": "yes"``
once made a control question censored, two categories of one name gave one id to two questions, and a
category name reaches run-dir tables, exports and page links. Both formats are validated here, against
the models below, before :mod:`audit.benchmark.questions` builds its questions: booleans only as
booleans, texts non-empty, category names and ids one safe path component (letters, digits, ``.``,
``_``, ``-``; :func:`audit.io.names.is_path_component`), category names unique (case folded, as a
case-insensitive disk would see them). Depth and size limits come before this, from the safe reader.
Keys the models do not name are left to the loader (the testbed carries ``level``, facts carry ``count``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from audit.io.names import is_path_component

SAFE_NAME_RULE = "1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"


def _safe_name(value: str) -> str:
    if not is_path_component(value):
        raise ValueError(f"{value[:60]!r} is not a safe name: use {SAFE_NAME_RULE}")
    return value


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


Text = Annotated[str, Field(strict=True), AfterValidator(_text)]
SafeName = Annotated[str, Field(strict=True), AfterValidator(_safe_name)]


class _Open(BaseModel):
    """A record whose other keys are kept for the loader (data from elsewhere carries its own)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class FactObject(_Open):
    """``{"fact": "...", "count": n}``: one fact of the testbed format (``count``: how many rollouts stated it)."""

    fact: Text
    count: Annotated[StrictInt, Field(ge=0)] | None = None


class _Question(_Open):
    question: Text
    facts: list[Text | FactObject] | None = None
    control: StrictBool = False
    lang: SafeName = "en"


class AuditingQuestion(_Question):
    """A question of the testbed format; its id is ``<category>-<n>``."""


class Category(_Open):
    name: SafeName
    questions: list[AuditingQuestion]


class AuditingFile(_Open):
    """``{"metadata"?: {...}, "categories": [{"name", "questions": [...]}]}`` (Casademunt et al.)."""

    categories: list[Category]


class JsonlQuestion(_Question):
    """One line of the JSONL format: ``{"question", "facts"?, "category"?, "lang"?, "control"?, "id"?}``."""

    id: SafeName | None = None
    category: SafeName | None = None


class BadQuestionFile(ValueError):
    """``where`` (``categories[0].questions[2].control``) and ``problem``, for the loader's one line."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = where, problem


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _first(error: ValidationError) -> BadQuestionFile:
    """The first problem as one where/problem pair, in the words of the file's format."""
    found = error.errors(include_url=False)[0]
    loc = tuple(p for p in found["loc"] if not (isinstance(p, str) and ("[" in p or p in {"str", "FactObject"})))
    kind, field = found["type"], next((p for p in reversed(loc) if isinstance(p, str)), "value")
    if loc and isinstance(loc[-1], int) and field == "facts":
        return BadQuestionFile(_where(loc[:-2]), f"fact {loc[-1] + 1} must be a non-empty string or "
                                                 "{\"fact\": \"...\"}")
    if kind == "missing":
        return BadQuestionFile(_where(loc[:-1]), f"missing {field!r}")
    if kind == "bool_type":
        return BadQuestionFile(_where(loc[:-1]), f"{field!r} must be true or false, not {found['input']!r}")
    if kind == "list_type":
        return BadQuestionFile(_where(loc[:-1]), f"{field!r} must be a list, found {type(found['input']).__name__}")
    if kind in ("string_type", "int_type"):
        wanted = "a string" if kind == "string_type" else "a whole number"
        return BadQuestionFile(_where(loc[:-1]), f"{field!r} must be {wanted}, not {type(found['input']).__name__}")
    if kind == "value_error":
        return BadQuestionFile(_where(loc[:-1]), f"{field!r} {found['ctx']['error']}")
    return BadQuestionFile(_where(loc[:-1]) if loc else "", f"{field!r} {found['msg'][0].lower()}{found['msg'][1:]}")


def check_testbed(data: Any) -> AuditingFile:
    """``data`` (a parsed ``.json``) as a :class:`AuditingFile`, or :class:`BadQuestionFile` naming the first problem."""
    if not isinstance(data, Mapping) or "categories" not in data:
        raise BadQuestionFile("", "expected an object with 'categories' (the chinese_auditing format)")
    try:
        checked = AuditingFile.model_validate(data)
    except ValidationError as exc:
        raise _first(exc) from None
    seen: dict[str, int] = {}
    for c, category in enumerate(checked.categories):
        key = category.name.casefold()
        if key in seen:
            raise BadQuestionFile(f"categories[{c}]", f"the name {category.name!r} is also categories[{seen[key]}]'s, "
                                                     "so their questions would share ids; give each category its own name")
        seen[key] = c
    return checked


def check_jsonl_line(data: Any) -> JsonlQuestion:
    """One parsed JSONL line as a :class:`JsonlQuestion`, or :class:`BadQuestionFile` naming its first problem."""
    if not isinstance(data, Mapping):
        raise BadQuestionFile("", "each line must be a JSON object with 'question'")
    try:
        return JsonlQuestion.model_validate(data)
    except ValidationError as exc:
        raise _first(exc) from None
