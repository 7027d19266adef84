"""Measurement: `voxtray bench` (`runner`, `live`, `matrix`) and the evaluation it scores
with (`normalizer` and its `spellings`, `wer`, `vocabulary`)."""
