"""The readers of run directories, above the experiments: they know each experiment's files.

- :mod:`audit.runs.loading`: every read of a run's files beyond its record (responses, turns,
  answers, cards, usage), each on first use (:class:`~audit.runs.loading.RunFiles`).
- :mod:`audit.runs.tables`: the runs as pandas tables (one row per run, response or answer).
- :mod:`audit.runs.index`: ``runs.html`` and the text table of ``python -m audit.runs``.

The record itself (status, summary, draws, answers, the run dir, finding runs) is
:mod:`audit.record`, which imports no experiment.
"""
