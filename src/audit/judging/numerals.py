"""Numbers, ordinals and dates written one way, whatever the script or form (pure: text in, tokens out).

The credit rule decides who wrote a fact's words (:func:`audit.judging.credit.rests_on_auditor`) by
comparing words; a date or a number written differently by the fact and the target would otherwise
be no shared word at all, and a Chinese answer's date (``1989年5月20日``) none of the target's own, so a
fact the target stated in its own words was taken for the auditor's. :func:`tokens` cuts text into the
units that comparison reads, with every number, ordinal and date in one canonical form:

* digits of any script as ASCII (NFKC turns full-width ``１９８９`` into ``1989``; other scripts' decimal
  digits, e.g. Arabic-Indic, are mapped by their Unicode value), without leading zeros or thousands
  separators: ``1,000`` and ``1000`` are ``1000``;
* Chinese numerals, digit by digit (``一九八九`` → ``1989``) or positional (``二十`` → ``20``,
  ``一百零五`` → ``105``, ``三千`` → ``3000``), and ``万``/``亿`` after digits (``10万`` → ``100000``);
* English number words and ordinals (``twenty`` and ``twentieth`` → ``20``, ``twenty-first`` and
  ``21st`` → ``21``, ``two hundred`` → ``200``, ``10 thousand`` → ``10000``; a decade, ``1980s``, is
  its first year);
* months as one token, ``month:5``: from English names (``May``, ``Sept.``) and from ``5月``/``五月``;
  a day (``20日``, ``20号``) and a year (``1989年``) are their numbers, and ``1989-05-20`` is
  ``1989 month:5 20``.

Words that are numbers or months only sometimes ("one", "first", "second", "may", "march" and the
month abbreviations) are read as such only beside a number or a month ("the first of June", "May 20");
elsewhere they stay words. Every other run of letters is a word (casefolded), and each CJK character
is a token of its own, as the credit rule has always split CJK text.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

MONTH = "month:"
"""The prefix of a month token (``month:5``): no word of any text can take this form."""

_CJK = "\u3400-\u9fff\uf900-\ufaff"
_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9}
_CJK_SMALL = {"十": 10, "百": 100, "千": 1000}
_CJK_LARGE = {"万": 10_000, "亿": 100_000_000}
_CJK_NUMERAL = re.compile(f"[{''.join(_CJK_DIGITS)}{''.join(_CJK_SMALL)}{''.join(_CJK_LARGE)}]+")
_CJK_DATE_UNIT = "年月日号"
_DIGITS_THEN_LARGE = re.compile(r"(\d+(?:\.\d+)?)\s*([万亿])")
_ANY_DIGIT = re.compile(r"\d")
_TOKEN = re.compile(
    r"(?P<iso>\d{4})[-/.](?P<iso_m>\d{1,2})[-/.](?P<iso_d>\d{1,2})(?!\d)"
    r"|(?P<cmonth>\d{1,2})\s*月"
    r"|(?P<cday>\d{1,2})\s*[日号]"
    r"|(?P<cyear>\d+)\s*年"
    r"|(?P<num>\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?)(?:\s*(?:st|nd|rd|th)\b|s\b)?"
    rf"|(?P<cjk>[{_CJK}])"
    r"|(?P<word>[^\W\d_]+)")

_UNITS = {w: k for k, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * k for k, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_ORDINALS = {w: k for k, w in enumerate("zeroth first second third fourth fifth sixth seventh eighth ninth tenth "
                                        "eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth "
                                        "eighteenth nineteenth".split())}
_ORDINALS |= {w: 10 * k for k, w in enumerate("twentieth thirtieth fortieth fiftieth sixtieth seventieth "
                                              "eightieth ninetieth".split(), 2)}
_HUNDRED = ("hundred", "hundredth")
_LARGE = {"thousand": 1000, "million": 10**6, "billion": 10**9, "thousandth": 1000, "millionth": 10**6}
_ENDS = frozenset(_ORDINALS) | {"hundredth", "thousandth", "millionth"}
"""Ordinals: each ends the number it closes ("the twenty-first", "the hundredth")."""
_MONTHS = {name: k for k, name in enumerate("january february march april may june july august september october "
                                            "november december".split(), 1)}
_ABBREVIATED = {full[:3]: k for full, k in _MONTHS.items() if len(full) > 3} | {"sept": 9}
_MONTHS |= _ABBREVIATED
_SOMETIMES = frozenset({"one", "first", "second", "may", "march", *_ABBREVIATED})
"""Words that are a number or a month only beside a number or a month (else: a pronoun, an adverb, a
verb, a protest march)."""
_BETWEEN = frozenset({"of", "the"})
"""Words skipped when looking for a neighbour ("the 4th of June")."""


def _ascii_digits(text: str) -> str:
    return _ANY_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group(), 0)), text)


def _number(value: Decimal) -> str:
    """A number's one spelling: no leading zeros, no trailing decimal zeros."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def cjk_value(numeral: str) -> int:
    """The value of a run of Chinese numerals: digit by digit when it has no 十/百/千/万/亿
    (``一九八九`` = 1989), else positional (``二十一`` = 21, ``十五`` = 15, ``一万零五`` = 10005)."""
    if all(c in _CJK_DIGITS for c in numeral):
        return int("".join(str(_CJK_DIGITS[c]) for c in numeral))
    total = section = digit = 0
    for c in numeral:
        if c in _CJK_DIGITS:
            digit = _CJK_DIGITS[c]
        elif c in _CJK_SMALL:
            section += (digit or 1) * _CJK_SMALL[c]
            digit = 0
        else:
            total = (total + section + digit) * _CJK_LARGE[c]
            section = digit = 0
    return total + section + digit


def _is_cjk_number(run: str, following: str) -> bool:
    """A run of numeral characters is a number when it is one for sure: several digits, a digit
    before 十/百/千 (or 十 leading), or anything before a date unit. A lone 一 (一些, 统一) or 万 (万一)
    and 千万 stay characters."""
    if following and following in _CJK_DATE_UNIT:
        return run[0] in _CJK_DIGITS or run[0] == "十"
    if all(c in _CJK_DIGITS for c in run):
        return len(run) >= 2
    return run[0] in _CJK_DIGITS or (run[0] == "十" and len(run) >= 2)


def _cjk_numbers(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        run, end = match.group(), match.end()
        following = text[end] if end < len(text) else ""
        return f" {cjk_value(run)} " if _is_cjk_number(run, following) else run

    text = _CJK_NUMERAL.sub(replace, text)
    return _DIGITS_THEN_LARGE.sub(lambda m: f" {_number(Decimal(m[1]) * _CJK_LARGE[m[2]])} ", text)


Token = tuple[str, str, str]
"""``(kind, token, word)``: kind ``num`` (a canonical number), ``month`` (``month:N``), ``word`` (letters, or
one CJK character) or ``maybe`` (a number spelt by one of the words that are numbers only sometimes);
``word`` is the text it was read from."""


def _raw_tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        if m["iso"]:
            out += [("num", str(int(m["iso"])), m["iso"]), ("month", f"{MONTH}{int(m['iso_m'])}", m["iso_m"]),
                    ("num", str(int(m["iso_d"])), m["iso_d"])]
        elif m["cmonth"]:
            out.append(("month", f"{MONTH}{int(m['cmonth'])}", m.group()))
        elif m["cday"] or m["cyear"]:
            out.append(("num", str(int(m["cday"] or m["cyear"])), m.group()))
        elif m["num"]:
            out.append(("num", _number(Decimal(m["num"].replace(",", ""))), m.group()))
        else:
            word = m["cjk"] or m["word"]
            out.append(("word", word, word))
    return out


def _read_number(tokens: list[Token], start: int) -> tuple[Decimal, int]:
    """The number English words spell from ``tokens[start]`` on ("two hundred and five", "twenty-first",
    "10 thousand"): its value and the index after it (``start`` when none, or only a lone number)."""
    total, current, last, i = Decimal(0), Decimal(0), "", start
    while i < len(tokens):
        kind, word, _ = tokens[i]
        small = _UNITS.get(word, _ORDINALS.get(word)) if kind == "word" else None
        if kind == "num" and i == start:
            current, last = Decimal(word), "num"
        elif small is not None and (last in ("", "hundred", "big") or (small < 10 and last == "tens")):
            current, last = current + small, "small"
        elif kind == "word" and word in _TENS and last in ("", "hundred", "big"):
            current, last = current + _TENS[word], "tens"
        elif kind == "word" and word in _HUNDRED and last in ("", "num", "small", "tens") and current < 100:
            current, last = (current or 1) * 100, "hundred"  # "a hundred", "the hundredth": one hundred
        elif kind == "word" and word in _LARGE and last != "big":
            total, current, last = total + (current or 1) * _LARGE[word], Decimal(0), "big"
        elif kind == "word" and word == "and" and last in ("hundred", "big") and i + 1 < len(tokens) \
                and (tokens[i + 1][1] in _UNITS or tokens[i + 1][1] in _TENS):
            i += 1
            continue
        else:
            break
        i += 1
        if word in _ENDS:
            break
    if last == "" or (i == start + 1 and last == "num"):
        return Decimal(0), start
    return total + current, i


def _number_words(tokens: list[Token]) -> list[Token]:
    """English number words (and a number before "thousand", "million", ...) merged into one number."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        value, j = _read_number(tokens, i)
        if j > i:
            words = " ".join(t[2] for t in tokens[i:j])
            out.append(("maybe" if j - i == 1 and words in _SOMETIMES else "num", _number(value), words))
            i = j
        else:
            out.append(tokens[i])
            i += 1
    return out


def _neighbour(tokens: list[Token], i: int, step: int) -> str:
    """The kind of the nearest token before (``step`` -1) or after (+1) ``i``, past "of"/"the"."""
    j = i + step
    while 0 <= j < len(tokens) and tokens[j][0] == "word" and tokens[j][1] in _BETWEEN:
        j += step
    return tokens[j][0] if 0 <= j < len(tokens) else ""


def _months(tokens: list[Token]) -> list[Token]:
    """Month names as ``month:N`` (an ambiguous one only beside a number)."""
    out = list(tokens)
    for i, (kind, word, _) in enumerate(tokens):
        if kind == "word" and word in _MONTHS:
            beside = {_neighbour(tokens, i, -1), _neighbour(tokens, i, 1)}
            if word not in _SOMETIMES or beside & {"num", "maybe"}:
                out[i] = ("month", f"{MONTH}{_MONTHS[word]}", word)
    return out


def tokens(text: str) -> list[str]:
    """``text`` as the units the credit rule compares: canonical numbers, ``month:N`` tokens, casefolded
    words and single CJK characters, in order (see the module docs)."""
    text = _cjk_numbers(_ascii_digits(unicodedata.normalize("NFKC", text).casefold()))
    marked = _months(_number_words(_raw_tokens(text)))
    out = []
    for i, (kind, token, word) in enumerate(marked):
        if kind == "maybe":  # "one", "first", "second": a number only beside a number or a month
            out.append(token if {_neighbour(marked, i, -1), _neighbour(marked, i, 1)} & {"num", "month"} else word)
        else:
            out.append(token)
    return out
