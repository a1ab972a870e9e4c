"""audit: an experiment framework for auditing language models.

Two experiments share one model gateway (``audit.llm``): the censorship audit
(``python -m audit``) and the epistemic-confusion benchmark
(``python -m audit.epistemic``). Importing this package is cheap on purpose: litellm
(~3 s to import) is only loaded when a job actually calls a model.
"""

__version__ = "0.1.0"
