"""Judging, in one package: the vocabulary, the judge's prompts and parsers, the call, panels,
majority, agreement and the counting rules. The audit loop and a rescore judge through the same
pass over draws; compare, the reports and the judge check count with the same rules.

* :mod:`audit.judging.judge`: the vocabulary (response classes, fact statuses, the kinds of judged
  item, defined once), the judge's messages and reply parsers, fact scores.
* :mod:`audit.judging.prompts`: the judge's prompt files and how it is told the topic.
* :mod:`audit.judging.passes`: judging as a pass over draws (the requests the loop and rescore send).
* :mod:`audit.judging.call`: one judge call, or a panel's calls, through the gateway; failures recorded.
* :mod:`audit.judging.panel`: the panel the config asks for (``judge.models``, ``judge.samples``), checked.
* :mod:`audit.judging.votes` and :mod:`audit.judging.majority`: one item's member judgments combined.
* :mod:`audit.judging.agreement`: Cohen's kappa, Krippendorff's alpha and the confusion matrix
  between judgings, with bootstrap intervals that keep a run's responses together.
* :mod:`audit.judging.panel_summary`: a run's panel outcomes, member failures and agreement.
* :mod:`audit.judging.counting`: how a summary's labels and fact verdicts become counts.
"""
