"""The fixed-question benchmark (``python -m audit.benchmark``): question sets, the run, its tables."""
