"""Version of the converted-graph layout, readable without importing onnx.

The store compares it with each installed model's manifest to tell stale conversions;
the tray does that at start, where importing the converter (and onnx) would cost ~11 MB.
"""

from __future__ import annotations

CONVERTER_VERSION = 7
"""Bumped whenever the graphs change, so stores can tell stale conversions.

4: the int8 decoder looks tokens up in a float16 copy of the embedding table.
5: the int8 decoder took token embeddings from its quantised output projection.
6: the float16 table again: 5 changed a transcript the 500-cycle soak checks.
7: int8 weights in 7 bits (reduced range): full-range weights overflow on CPUs without
   VNNI.
"""
