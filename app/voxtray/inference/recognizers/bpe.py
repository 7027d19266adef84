"""Byte-level BPE encoding from a token table alone, as Whisper's tokenizer does it.

In the GPT-2 family of vocabularies (Whisper's included) a token's id is its merge rank,
so the id -> bytes table is enough: split text into pieces with GPT-2's pattern, then in
each piece keep merging the adjacent pair whose joined bytes have the lowest id.
"""

from __future__ import annotations

import re

# GPT-2's pre-tokenizer, with \p{L} as [^\W\d_] and \p{N} as \d.
_WORD = re.compile(r" ?[^\W\d_]+")
_NONE = 1 << 62  # the rank of a pair that is no token
_PIECES = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")
_LONGEST_PIECE = 256  # bytes merged as one piece


class BytePairEncoder:
    """Encodes text into the ids of `token_bytes[:n_ordinary]` (special tokens excluded)."""

    def __init__(self, token_bytes: list[bytes], n_ordinary: int) -> None:
        self._ranks: dict[bytes, int] = {}
        for rank, token in enumerate(token_bytes[:n_ordinary]):
            if token:
                self._ranks.setdefault(token, rank)

    def encode(self, text: str) -> list[int]:
        if _WORD.fullmatch(text):  # one piece: most of a vocabulary's entries
            return self._merge(text.encode("utf-8"))
        ids: list[int] = []
        for piece in _PIECES.findall(text):
            raw = piece.encode("utf-8")
            # Merging is quadratic in a piece's length: a 32 kB word took 46 s. No token
            # is nearly this long, so cutting a longer piece changes only absurd input.
            for start in range(0, len(raw), _LONGEST_PIECE):
                ids += self._merge(raw[start : start + _LONGEST_PIECE])
        return ids

    def _merge(self, piece: bytes) -> list[int]:
        get = self._ranks.get
        whole = get(piece)
        if whole is not None:
            return [whole]
        parts = [piece[i : i + 1] for i in range(len(piece))]
        # Each adjacent pair's rank, updated only beside a merge: a vocabulary of
        # thousands of names is encoded at start-up.
        pairs = [get(parts[i] + parts[i + 1], _NONE) for i in range(len(parts) - 1)]
        while pairs:
            lowest = min(pairs)
            if lowest == _NONE:
                break
            best = pairs.index(lowest)
            parts[best : best + 2] = [parts[best] + parts[best + 1]]
            del pairs[best]
            if best < len(pairs):
                pairs[best] = get(parts[best] + parts[best + 1], _NONE)
            if best > 0:
                pairs[best - 1] = get(parts[best - 1] + parts[best], _NONE)
        return [rank for part in parts if (rank := get(part)) is not None]
