"""Statistics, in one package (pure: no I/O): every interval the project publishes and the
simulations that check their coverage.

* :mod:`audit.stats.intervals`: shares with their 95% intervals (Wilson, run-clustered,
  question-clustered, paired and unpaired differences) and the sentence each interval's method prints.
* :mod:`audit.stats.cards`: intervals over epistemic cards when each card is answered several times.
* :mod:`audit.stats.coverage`: the simulated grids that measure those intervals' coverage
  (``bench/bench_coverage.py`` prints them; the tests hold the figures the docs quote).
"""
