"""The top of the tool: what Hydra starts and calls back, above every experiment and reader.

- :mod:`audit.app.hydra_app`: each entrypoint's ``@hydra.main`` function is started through
  :func:`~audit.app.hydra_app.run_app` (``--help``, ``resume=<sweep dir>``, one-line config errors).
- :mod:`audit.app.sweep_end`: the ``on_multirun_end`` callback (``conf/hydra/default.yaml``) that
  counts a sweep's jobs and writes its comparison.
- :mod:`audit.app.warm_imports`: what the warm launcher imports once, before it forks every job.
"""
