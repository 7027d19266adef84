"""Measurement: `voxtray bench` (`runner`, `live`, `matrix`) and the vocabulary evaluation
(`vocabulary`); the scores come from `voxtray.scoring`."""
