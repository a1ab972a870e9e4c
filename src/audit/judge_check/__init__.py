"""``python -m audit.judge_check labels.csv judge=...``: how well the judge agrees with a researcher's own labels.

* :mod:`audit.judge_check.labels`: the labelled-responses CSV (its columns, checked; the
  template and a synthetic worked example ship in ``data/``).
* :mod:`audit.judge_check.metrics`: per-label precision and recall, the confusion matrix and
  kappa against the human labels, with intervals (pure).
* :mod:`audit.judge_check.check`: runs the configured judge on every response through the
  gateway, with the audit's own judge prompt and parser (:mod:`audit.judging.judge`).
* :mod:`audit.judge_check.report`: prints the result and writes ``judge_check.csv``,
  ``judge_check_items.csv``, ``judge_check.json`` and ``judge_check.html``.
"""
