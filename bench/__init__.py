"""Benchmarks that print figures: `python -m bench.inbox_throughput`, `python -m bench.end_to_end`."""
