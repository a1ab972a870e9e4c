"""Which Inspect log a run becomes: one mapper per experiment, chosen by the run's experiment.

The dispatcher sits above the mappers (:mod:`audit.export.inspect_log` for the audit and the
epistemic experiment, :mod:`audit.export.benchmark_log` for the benchmark, which reuses the first's
pieces), so no mapper imports another inside a function.
"""
from __future__ import annotations

from inspect_ai.log import EvalLog

from audit.export.benchmark_log import benchmark_log
from audit.export.inspect_log import censorship_log, epistemic_log
from audit.runs.loading import RunFiles
from audit.record.summary import BENCHMARK, CENSORSHIP, EPISTEMIC


def inspect_log(run: RunFiles) -> EvalLog:
    """The log of any experiment's run."""
    if run.experiment == CENSORSHIP:
        return censorship_log(run)
    if run.experiment == EPISTEMIC:
        return epistemic_log(run)
    if run.experiment == BENCHMARK:
        return benchmark_log(run)
    raise ValueError(f"{run.label}: not a run of a known experiment (state {run.state}); nothing to export")
