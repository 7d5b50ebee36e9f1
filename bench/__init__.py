"""Micro-benchmarks, run as `python -m bench.<name>`; results go to docs/benchmarks.md."""
