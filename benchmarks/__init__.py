"""Benchmarks of keras_attention: `python -m benchmarks.run [--quick]`.

See `docs/benchmarks.md`. Not part of the test suite (the machinery is
tested on tiny shapes in `tests/test_performance.py`).
"""
