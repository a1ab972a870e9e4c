"""The job runtime: how an entrypoint becomes a run or a sweep.

Hydra composition and one-line config errors (``hydra_app``), ``--help`` text (``cli_help``),
SIGTERM as Ctrl-C (``interrupts``), resuming a run dir (``resume``), a sweep's jobs, repeats and
budget (``sweep``) and the comparison written when a sweep ends (``sweep_end``). The experiments
call into it; nothing here knows what an audit or a card is beyond the run record.
"""
