"""Developer benchmarks whose figures the docs quote: `python -m tools.bench.X`."""
