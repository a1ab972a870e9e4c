"""Judging statistics that do not depend on how a judge is called (pure: no I/O).

* :mod:`audit.judges.majority`: a judge panel's label for one item, from every member's votes.
* :mod:`audit.judges.agreement`: Cohen's kappa, Krippendorff's alpha and the confusion matrix
  between judgings, with bootstrap intervals that keep a run's responses together.
* :mod:`audit.judges.panel`: the panel the config asks for (``judge.models``, ``judge.samples``), checked.
* :mod:`audit.judges.votes`: one item's member judgments combined into the record a run keeps.
* :mod:`audit.judges.panel_summary`: a run's panel outcomes, member failures and agreement.
"""
