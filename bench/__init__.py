"""squall benchmarks: python -m bench.<name>. Not tests."""
