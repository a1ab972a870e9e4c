"""False ``confirmed`` and false ``revealed`` on English facts answered in English and Chinese.

The cases are ``tests/judging/credit_cases.yaml`` (wh- and yes/no questions, terse and full answers,
refusals), run through the credit rules of whichever ``audit`` is on the path
(``tests/judging/credit_cases.py``), once with a careful blind judge (it answers as a reader would
from what the rules show it) and once with a credulous one (it says "states" to everything). To
compare two versions of the code, run it with each one's ``src`` first on the path:

    PYTHONPATH=/path/to/main/src:. python bench/bench_credit_languages.py    # before
    PYTHONPATH=src:. python bench/bench_credit_languages.py                  # after
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.judging

from tests.judging.credit_cases import load_cases, tally  # noqa: E402


def main() -> None:
    cases = load_cases()
    for judge, credulous in (("careful", False), ("credulous", True)):
        counts = tally(cases, credulous)
        print(f"{judge} judge, {counts['cases']} cases: false confirmed {counts['false_confirmed']}, "
              f"false revealed {counts['false_revealed']}, missed revealed {counts['missed_revealed']}")
        for line in counts["wrong"]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
