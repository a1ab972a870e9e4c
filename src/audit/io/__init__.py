"""File I/O shared by the experiments (atomic writes, JSON lines)."""
