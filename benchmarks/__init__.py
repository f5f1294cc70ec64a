"""asafe benchmark suites, run from a checkout as ``python -m benchmarks SUITE``."""
