"""Judging statistics that do not depend on how a judge is called (pure: no I/O).

* :mod:`audit.judges.majority`: a judge panel's label for one item, from every member's votes.
* :mod:`audit.judges.agreement`: Cohen's kappa, Krippendorff's alpha and the confusion matrix
  between judgings, with bootstrap intervals that keep a run's responses together.
"""
