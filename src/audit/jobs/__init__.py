"""The job runtime: how an entrypoint's run becomes a run dir, a repeat or a sweep job.

SIGTERM as Ctrl-C (``interrupts``), resuming a run dir (``resume``, with the saved config checked
as data by ``saved_config``), finishing a stopped sweep (``finish``), a sweep's jobs, repeats and
budget (``sweep``, ``sweep_stop``), ``--help`` text (``cli_help``) and the checks of a command line
(``added_keys``, ``unstarted_sweep``). The experiments call into it; nothing here knows what an
audit or a card is beyond the run record (:mod:`audit.record`). The Hydra app and the sweep-end
callback that start and close a sweep sit above the experiments, in :mod:`audit.app`.
"""
