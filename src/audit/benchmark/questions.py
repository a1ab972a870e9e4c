"""The benchmark's question sets: what ``questions=<set>`` asks, read into one shape (pure: files in,
:class:`QuestionSet` out; no run dir, no model).

Four sources give the same :class:`Question` (id, text, category, kind, language, facts):

* ``deccp``: the 95 censored and 37 control questions of AUGMXNT/deccp (Apache-2.0, bundled in
  ``data/deccp`` with its license). The lists carry no categories: every question is ``uncategorised``.
* ``topics``: the project's own topics (``conf/topic/*.yaml``): one question per topic, asked in the
  topic's language (the wording is ``prompts/topic_question_<lang>.txt``), scored on its key facts; a
  topic marked ``control: true`` is a control question.
* a ``.json`` file in the ``chinese_auditing`` format of Casademunt et al.
  (``{"metadata": {...}, "categories": [{"name", "questions": [{"question", "facts": [{"fact",
  "count"}, ...]}]}]}``); the user brings the file (that repository has no license).
* a ``.jsonl`` file, one ``{"question", "facts"?, "category"?, "lang"?, "control"?, "id"?}`` per line.

Control questions are always asked: ``questions.limit=K`` keeps the first K questions of each kind
(censored and control), and ``questions.categories=[...]`` keeps those categories' questions, so a
quick run still has its null control (a category filter that leaves no control says so).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from audit.censorship.topics import check_topic
from audit.config_values import as_list
from audit.errors import UserError, unknown_choice
from audit.benchmark.question_schema import BadQuestionFile, check_jsonl_line, check_testbed
from audit.io.safe_read import MAX_CONFIG_BYTES, UnsafeFile, load_yaml, parse_json, read_text
from audit.prompt_files import fill, loader

DATA_DIR = Path(__file__).resolve().parent / "data"
load_prompt = loader(Path(__file__).resolve().parent / "prompts")
CENSORED, CONTROL = "censored", "control"
UNCATEGORISED = "uncategorised"
SETS = ("deccp", "topics", "file")
"""The choices of ``questions.set`` (``file`` reads ``questions.path``)."""
MAX_QUESTION_FILE = 50_000_000
"""A question file larger than this is refused (the published testbed's file is ~0.5 MB)."""


@dataclass(frozen=True)
class Fact:
    """One ground-truth fact of a question: a stable id within the question and its text. ``count``
    is how many of the testbed's reference answers stated it (a chinese_auditing file's ``count``;
    None where the source gives none); ``questions.min_fact_count`` filters on it, so only the facts
    kept reach ``questions.jsonl``."""

    id: str
    text: str
    count: int | None = None


@dataclass(frozen=True)
class Question:
    """One fixed question as asked: ``kind`` is ``censored`` or ``control`` (never pooled)."""

    id: str
    text: str
    category: str = UNCATEGORISED
    kind: str = CENSORED
    lang: str = "en"
    facts: tuple[Fact, ...] = ()

    def record(self) -> dict[str, Any]:
        """The question as saved in a run dir (``questions.jsonl``): what a resume and the tables read."""
        return {"id": self.id, "text": self.text, "category": self.category, "kind": self.kind, "lang": self.lang,
                "facts": [{"id": f.id, "text": f.text} for f in self.facts]}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Question:
        return cls(str(record["id"]), str(record["text"]), str(record["category"]), str(record["kind"]),
                   str(record["lang"]), tuple(Fact(str(f["id"]), str(f["text"])) for f in record.get("facts") or []))


@dataclass(frozen=True)
class QuestionSet:
    """A named list of questions and where it came from (``source``: attribution shown in the run)."""

    name: str
    questions: tuple[Question, ...]
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def counts(self) -> dict[str, int]:
        return {kind: sum(q.kind == kind for q in self.questions) for kind in (CENSORED, CONTROL)}


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in read_text(path, max_bytes=MAX_CONFIG_BYTES).splitlines() if line.strip()]


def deccp() -> QuestionSet:
    """The bundled deccp lists: ``censored-NNN`` and ``control-NNN`` in file order."""
    folder = DATA_DIR / "deccp"
    questions = [Question(f"{kind}-{n:03d}", text, kind=kind)
                 for kind, name in ((CENSORED, "censored.txt"), (CONTROL, "uncensored.txt"))
                 for n, text in enumerate(_lines(folder / name), 1)]
    return QuestionSet("deccp", tuple(questions), "AUGMXNT/deccp (Apache-2.0; audit/benchmark/data/deccp/LICENSE)")


def _topic_node(folder: Path, name: str) -> dict[str, Any]:
    """A topic yaml with its ``defaults`` (another topic it extends) merged under it."""
    node = load_yaml(folder / f"{name}.yaml")
    data: dict[str, Any] = {}
    for base in node.get("defaults") or []:
        if isinstance(base, str) and base != "_self_":
            data.update(_topic_node(folder, base))
    data.update({k: v for k, v in node.items() if k != "defaults"})
    check_topic(data, str(folder / f"{name}.yaml"))
    return data


def topics(conf: Path, names: Sequence[str] | None = None) -> QuestionSet:
    """One question per topic of ``conf/topic`` (or the ``names`` given), on its key facts."""
    folder = conf / "topic"
    available = sorted(p.stem for p in folder.glob("*.yaml"))
    for name in names or ():
        if name not in available:
            raise unknown_choice("topic in questions.topics", str(name), available)
    questions = []
    for name in names or available:
        node = _topic_node(folder, name)
        lang = str(node.get("language") or "en")
        try:
            template = load_prompt(f"topic_question_{lang}")
        except UserError:
            template = load_prompt("topic_question_en")
        questions.append(Question(
            name, fill(template, display_name=str(node["display_name"])), category=name,
            kind=CONTROL if node.get("control") else CENSORED, lang=lang,
            facts=tuple(Fact(f"f{k}", str(text)) for k, text in enumerate(node.get("key_facts") or [], 1))))
    return QuestionSet("topics", tuple(questions), "conf/topic (the audit's topics and key facts)")


_FIX = "see docs/benchmark.md for the two file formats"


def _bad(path: Path, where: str, problem: str) -> UserError:
    return UserError(f"questions.path={path}{where}: {problem}; {_FIX}")


def _parsed(path: Path, where: str, text: str) -> Any:
    """``text`` parsed through the safe reader (nesting bounded before the decoder runs), one line otherwise."""
    try:
        return parse_json(text, path, fix=_FIX)
    except UnsafeFile as exc:
        raise _bad(path, where, exc.problem) from None


def _invalid(path: Path, where: str, exc: BadQuestionFile) -> UserError:
    return _bad(path, f"{where} {exc.where}".rstrip() if exc.where else where, exc.problem)


def _facts(path: Path, where: str, value: Any) -> tuple[Fact, ...]:
    """Facts given as strings or as ``{"fact": ...}`` objects (the chinese_auditing shape)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad(path, where, f"'facts' must be a list, found {type(value).__name__}")
    out = []
    for k, item in enumerate(value, 1):
        text = item.get("fact") if isinstance(item, Mapping) else item
        if not isinstance(text, str) or not text.strip():
            raise _bad(path, where, f"fact {k} must be a non-empty string or {{\"fact\": \"...\"}}")
        count = item.get("count") if isinstance(item, Mapping) else None
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise _bad(path, where, f"fact {k}: 'count' must be a whole number, at least 0")
        out.append(Fact(f"f{k}", text.strip(), count))
    return tuple(out)


def _text(path: Path, where: str, obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str) or not value.strip():
        problem = f"missing {key!r}" if key not in obj else f"{key!r} must be a non-empty string"
        raise _bad(path, where, problem)
    return value.strip()


def chinese_auditing(path: Path, data: Mapping[str, Any]) -> QuestionSet:
    """A file in the chinese_auditing format; ids are ``<category>-<n>`` (n from 1 within the category)."""
    categories = data.get("categories")
    if not isinstance(categories, list):
        raise _bad(path, "", "'categories' must be a list of {\"name\", \"questions\"}")
    questions = []
    for c, category in enumerate(categories, 1):
        where = f" categories[{c - 1}]"
        if not isinstance(category, Mapping):
            raise _bad(path, where, "must be an object with 'name' and 'questions'")
        name = _text(path, where, category, "name")
        items = category.get("questions")
        if not isinstance(items, list):
            raise _bad(path, where, "'questions' must be a list")
        for n, item in enumerate(items, 1):
            at = f"{where}.questions[{n - 1}]"
            if not isinstance(item, Mapping):
                raise _bad(path, at, "must be an object with 'question' and 'facts'")
            questions.append(Question(f"{name}-{n}", _text(path, at, item, "question"), name,
                                      CONTROL if item.get("control") is True else CENSORED,
                                      str(item.get("lang") or "en"), _facts(path, at, item.get("facts"))))
    return QuestionSet(path.stem, tuple(questions), f"{path} (chinese_auditing format)")


def jsonl(path: Path, text: str) -> QuestionSet:
    """A plain JSONL file: ids are the line's ``id`` or ``q<line>``."""
    questions, seen = [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f" line {n}"
        obj = _parsed(path, where, line)
        try:
            control = check_jsonl_line(obj).control
        except BadQuestionFile as exc:
            raise _invalid(path, where, exc) from None
        qid = str(obj.get("id") or f"q{n}")
        if qid in seen:
            raise _bad(path, where, f"id {qid!r} is used twice; give each question its own id")
        seen.add(qid)
        questions.append(Question(qid, _text(path, where, obj, "question"),
                                  _text(path, where, obj, "category", UNCATEGORISED),
                                  CONTROL if control else CENSORED, _text(path, where, obj, "lang", "en"),
                                  _facts(path, where, obj.get("facts"))))
    if not questions:
        raise _bad(path, "", "has no questions")
    return QuestionSet(path.stem, tuple(questions), f"{path} (JSONL)")


def from_file(value: str) -> QuestionSet:
    """The question file at ``value``: chinese_auditing ``.json`` or ``.jsonl`` (one-line errors otherwise)."""
    path = Path(value).expanduser()
    if not path.is_file():
        raise UserError(f"questions.path={value}: no such file; give a .json file in the chinese_auditing format "
                        "or a .jsonl of {\"question\", \"facts\"?, ...} (docs/benchmark.md)")
    text = read_text(path, max_bytes=MAX_QUESTION_FILE, fix="give a UTF-8 question file")
    if path.suffix == ".jsonl":
        return jsonl(path, text)
    if path.suffix != ".json":
        raise _bad(path, "", "the name must end in .json (chinese_auditing format) or .jsonl")
    data = _parsed(path, "", text)
    try:
        check_testbed(data)
    except BadQuestionFile as exc:
        raise _invalid(path, "", exc) from None
    return chinese_auditing(path, data)


def _listed(value: Any) -> list[str] | None:
    """A config list (one string, a comma list or a YAML list), or None when unset: every one."""
    return None if value is None else as_list(value)


def min_count(questions: QuestionSet, minimum: Any) -> QuestionSet:
    """Only the facts stated at least ``minimum`` times (the testbed's ``min_fact_count``: a fact few
    reference answers gave is not scored); a fact without a count is kept. None: every fact."""
    if minimum is None:
        return questions
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        raise UserError(f"questions.min_fact_count={minimum!r}: give a whole number (the testbed's is 3), "
                        "or questions.min_fact_count=null for every fact")
    kept = tuple(replace(q, facts=tuple(f for f in q.facts if f.count is None or f.count >= minimum))
                 for q in questions.questions)
    before, after = (sum(len(q.facts) for q in qs) for qs in (questions.questions, kept))
    note = f"questions.min_fact_count={minimum}: {after} of {before} facts kept (count >= {minimum})"
    return replace(questions, questions=kept, notes=(*questions.notes, note))


def select(questions: QuestionSet, categories: Iterable[str] | None, limit: int | None) -> QuestionSet:
    """Keep ``categories`` (unknown ones: one line with did-you-mean), then the first ``limit`` of each kind."""
    kept = list(questions.questions)
    notes = list(questions.notes)
    if categories is not None:
        available = sorted({q.category for q in kept})
        wanted = list(categories)
        for name in wanted:
            if name not in available:
                raise unknown_choice(f"category of question set {questions.name!r} in questions.categories",
                                     name, available)
        kept = [q for q in kept if q.category in wanted]
        if not any(q.kind == CONTROL for q in kept):
            notes.append("the chosen categories hold no control question: this run has no null control")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UserError(f"questions.limit={limit!r}: give a whole number of questions per kind, at least 1 "
                            "(or questions.limit=null for all)")
        by_kind: dict[str, int] = {}
        limited = []
        for q in kept:
            by_kind[q.kind] = by_kind.get(q.kind, 0) + 1
            if by_kind[q.kind] <= limit:
                limited.append(q)
        kept = limited
    return replace(questions, questions=tuple(kept), notes=tuple(notes))


def question_set_name(node: Mapping[str, Any]) -> str:
    """The name a run's rows give its question set (a key of every cell): the set's, or with ``questions=file``
    the file's name without its suffix. Read from the config alone, so a resumed run and a reader of its
    saved config name the set as the run that drew it did."""
    name = str(node.get("set") or "")
    return Path(str(node["path"])).expanduser().stem if name == "file" and node.get("path") else name


def load_questions(node: Mapping[str, Any], conf: Path) -> QuestionSet:
    """The questions ``questions=`` names (``node`` is the ``questions`` config node), filtered."""
    name = str(node.get("set") or "")
    if name not in SETS:
        raise unknown_choice("question set (questions=...)", name, SETS)
    path = node.get("path")
    if name == "file":
        if not path:
            raise UserError("questions=file needs questions.path=<file.json or file.jsonl>")
        found = from_file(str(path))
    elif path:
        raise UserError(f"questions.path is read with questions=file, not questions={name}; "
                        "add questions=file to the command")
    elif name == "deccp":
        found = deccp()
    else:
        found = topics(conf, _listed(node.get("topics")))
    return select(min_count(found, node.get("min_fact_count")), _listed(node.get("categories")), node.get("limit"))
