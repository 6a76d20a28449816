"""Retrieval evaluations: `python -m agentos.eval locomo PATH`."""
