"""What a Whisper decoder needs to know of its vocabulary: special token ids from the
encoder's metadata, and each token's bytes from the tokens file."""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from pathlib import Path

from voxtray.errors import CorruptError
from voxtray.inference.recognizers.bpe import BytePairEncoder


@dataclass(frozen=True)
class WhisperVocab:
    """Token ids and strings the decoder needs, from the encoder metadata and tokens file."""

    n_text_layer: int
    n_text_ctx: int
    n_text_state: int
    sot_sequence: list[int]
    eot: int
    no_timestamps: int
    no_speech: int
    blank: int
    non_speech: list[int]
    languages: dict[str, int]
    token_bytes: list[bytes]
    sot_prev: int | None = None

    @classmethod
    def load(cls, metadata: dict[str, str], tokens_path: Path) -> WhisperVocab:
        token_bytes = _read_tokens(tokens_path)
        try:
            codes = metadata.get("all_language_codes", "")
            lang_ids = metadata.get("all_language_tokens", "")
            vocab = cls(
                n_text_layer=int(metadata["n_text_layer"]),
                n_text_ctx=int(metadata["n_text_ctx"]),
                n_text_state=int(metadata["n_text_state"]),
                sot_sequence=[int(i) for i in metadata["sot_sequence"].split(",")],
                eot=int(metadata["eot"]),
                no_timestamps=int(metadata["no_timestamps"]),
                no_speech=int(metadata["no_speech"]),
                blank=int(metadata["blank_id"]),
                non_speech=[int(i) for i in metadata["non_speech_tokens"].split(",") if i],
                languages=dict(
                    zip(codes.split(","), (int(i) for i in lang_ids.split(",") if i), strict=False)
                ),
                token_bytes=token_bytes,
                sot_prev=int(metadata["sot_prev"]) if "sot_prev" in metadata else None,
            )
        except (KeyError, ValueError) as exc:
            raise CorruptError(f"Whisper encoder metadata is incomplete: {exc}") from None
        if len(token_bytes) < vocab.eot:
            raise CorruptError(
                f"Whisper tokens file {tokens_path.name} has {len(token_bytes)} tokens, "
                f"the model needs {vocab.eot}"
            )
        return vocab

    def text(self, tokens: list[int]) -> str:
        raw = b"".join(self.token_bytes[t] for t in tokens if t < len(self.token_bytes))
        return raw.decode("utf-8", errors="replace")

    def word_ends(self, tokens: list[int]) -> list[tuple[str, int]]:
        """Words of the raw text and the token count up to each one's end; a word starts
        at a token that begins with a space."""
        ends: list[tuple[str, int]] = []
        begin = 0
        for index in range(1, len(tokens) + 1):
            if index == len(tokens) or self.token_bytes[tokens[index]][:1] == b" ":
                word = self.text(tokens[begin:index]).strip()
                if word:
                    ends.append((word, index))
                begin = index
        return ends

    @functools.cached_property
    def encoder(self) -> BytePairEncoder:
        return BytePairEncoder(self.token_bytes, self.eot)

    def prompt_tokens(self, prompt: str) -> list[int]:
        """`<|startofprev|>` and `prompt`'s tokens, as Whisper puts them before the
        start-of-transcript sequence; at most half the context, the most recent kept."""
        if not prompt.strip() or self.sot_prev is None:
            return []
        # A leading space, as Whisper encodes its prompt: words inside text start with one.
        tokens = self.encoder.encode(" " + prompt.strip())
        room = self.n_text_ctx // 2 - len(self.sot_sequence) - 2
        return [self.sot_prev, *tokens[-room:]]


def _read_tokens(path: Path) -> list[bytes]:
    table: dict[int, bytes] = {}
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            encoded, _, index = line.rpartition(" ")
            table[int(index)] = base64.b64decode(encoded) if encoded else b""
    except (OSError, ValueError) as exc:  # binascii.Error is a ValueError
        raise CorruptError(f"cannot read Whisper tokens file {path.name}: {exc}") from None
    # Without tokens every transcript decodes to "", which would pass for silence.
    if not table:
        raise CorruptError(f"Whisper tokens file {path.name} holds no tokens")
    return [table.get(i, b"") for i in range(max(table) + 1)]
