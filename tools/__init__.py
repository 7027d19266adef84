"""Programs that serve Voxtray's development and are not part of the product: the GPU kit,
the soak run, measurements and benchmarks. Run from the checkout root as `python -m tools.X`."""
