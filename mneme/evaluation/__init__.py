"""Evaluation harnesses and benchmarks (``mneme eval``, ``mneme bench``)."""
