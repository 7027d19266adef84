"""Measuring programs whose figures the docs quote: `python -m tools.measure.X`."""
