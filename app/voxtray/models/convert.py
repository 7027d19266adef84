"""Convert CTranslate2 Whisper weights into sherpa-onnx's Whisper ONNX layout, without torch.

The encoder takes `mel` [n_audio, n_mels, T] (any even T up to 3000) and returns every
decoder layer's cross-attention keys and values. The decoder takes `tokens`, a
self-attention KV cache of n_text_ctx positions, the cross K/V and `offset`, and returns
`logits` and the updated cache. The encoder carries the metadata sherpa-onnx reads, and
`<prefix>-tokens.txt` holds one `<base64 of the token's bytes> <id>` line per text token.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray

from voxtray.errors import CorruptError, NotFoundError
from voxtray.models.ct2 import read_ct2_model
from voxtray.models.onnx_graph import FLOAT, INT64, GraphBuilder, Transformer
from voxtray.models.quantize import quantize_int8

StepFn = Callable[[str], None]
Weights = dict[str, NDArray[np.generic]]


@dataclass(frozen=True)
class WhisperDims:
    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_vocab: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int


def _count_layers(weights: Weights, side: str) -> int:
    return sum(
        1
        for name in weights
        if name.startswith(f"{side}/layer_") and name.endswith("ffn/linear_0/weight")
    )


def whisper_dims(weights: Weights) -> WhisperDims:
    conv1 = weights["encoder/conv1/weight"]
    embeddings = weights["decoder/embeddings/weight"]
    return WhisperDims(
        n_mels=int(conv1.shape[1]),
        n_audio_ctx=int(weights["encoder/position_encodings/encodings"].shape[0]),
        n_audio_state=int(conv1.shape[0]),
        n_audio_head=int(np.asarray(weights["encoder/num_heads"])),
        n_audio_layer=_count_layers(weights, "encoder"),
        n_vocab=int(embeddings.shape[0]),
        n_text_ctx=int(weights["decoder/position_encodings/encodings"].shape[0]),
        n_text_state=int(embeddings.shape[1]),
        n_text_head=int(np.asarray(weights["decoder/num_heads"])),
        n_text_layer=_count_layers(weights, "decoder"),
    )


class _Params:
    """float32 views of the CTranslate2 variables, dequantising int8 weights if needed."""

    def __init__(self, weights: Weights) -> None:
        self._weights = weights

    def __call__(self, name: str) -> NDArray[np.float32]:
        array = self._weights[name]
        scale = self._weights.get(f"{name}_scale")
        if array.dtype == np.int8 and scale is not None:
            # CTranslate2 stores round(w * scale) per output row.
            return (array.astype(np.float32) / np.asarray(scale, np.float32)[:, None]).astype(
                np.float32
            )
        return np.asarray(array, dtype=np.float32)

    def split_rows(self, name: str, parts: int) -> list[NDArray[np.float32]]:
        return list(np.split(self(name), parts, axis=0))


def _self_attention_block(
    t: Transformer, p: _Params, x: str, prefix: str
) -> tuple[str, str, str, str]:
    """Pre-norm fused-QKV projection; returns (normed input, q, k, v)."""
    h = t.layer_norm(
        x, f"{prefix}.ln", p(f"{prefix}/layer_norm/gamma"), p(f"{prefix}/layer_norm/beta")
    )
    qkv = t.linear(h, f"{prefix}.qkv", p(f"{prefix}/linear_0/weight"), p(f"{prefix}/linear_0/bias"))
    q, k, v = t.split_last(qkv, 3)
    return h, q, k, v


def _feed_forward(t: Transformer, p: _Params, x: str, prefix: str) -> str:
    h = t.layer_norm(
        x, f"{prefix}.ln", p(f"{prefix}/layer_norm/gamma"), p(f"{prefix}/layer_norm/beta")
    )
    h = t.gelu(
        t.linear(h, f"{prefix}.fc1", p(f"{prefix}/linear_0/weight"), p(f"{prefix}/linear_0/bias"))
    )
    h = t.linear(h, f"{prefix}.fc2", p(f"{prefix}/linear_1/weight"), p(f"{prefix}/linear_1/bias"))
    return t.b.op("Add", x, h)


def _conv(b: GraphBuilder, x: str, p: _Params, name: str, stride: int) -> str:
    return b.op(
        "Conv",
        x,
        b.weight(f"{name}.weight", p(f"{name}/weight")),
        b.weight(f"{name}.bias", p(f"{name}/bias")),
        kernel_shape=[3],
        pads=[1, 1],
        strides=[stride],
    )


def build_encoder(weights: Weights, metadata: dict[str, str]) -> onnx.ModelProto:
    """The audio encoder plus every decoder layer's cross-attention K/V projection."""
    dims = whisper_dims(weights)
    p = _Params(weights)
    b = GraphBuilder("whisper_encoder")
    t = Transformer(b, dims.n_audio_head, dims.n_audio_state)
    mel = b.add_input("mel", FLOAT, ["n_audio", dims.n_mels, "T"])
    x = t.gelu(_conv(b, mel, p, "encoder/conv1", 1))
    x = t.gelu(_conv(b, x, p, "encoder/conv2", 2))
    x = b.op("Transpose", x, perm=[0, 2, 1])
    # Inputs shorter than 30 s use the first T/2 positions, which is what lets the
    # recogniser skip encoding padding.
    frames = b.op("Slice", b.op("Shape", x), b.const_i64([1]), b.const_i64([2]))
    positions = b.weight("encoder.positions", p("encoder/position_encodings/encodings"))
    x = b.op("Add", x, b.op("Slice", positions, b.const_i64([0]), frames, b.const_i64([0])))
    for i in range(dims.n_audio_layer):
        prefix = f"encoder/layer_{i}"
        _, q, k, v = _self_attention_block(t, p, x, f"{prefix}/self_attention")
        attended = t.attention(q, k, v)
        out = t.linear(
            attended,
            f"{prefix}.out",
            p(f"{prefix}/self_attention/linear_1/weight"),
            p(f"{prefix}/self_attention/linear_1/bias"),
        )
        x = _feed_forward(t, p, b.op("Add", x, out), f"{prefix}/ffn")
    x = t.layer_norm(x, "encoder.ln", p("encoder/layer_norm/gamma"), p("encoder/layer_norm/beta"))
    cross_k, cross_v = [], []
    zero = b.const_i64([0])
    for i in range(dims.n_text_layer):
        prefix = f"decoder/layer_{i}/attention/linear_1"
        wk, wv = p.split_rows(f"{prefix}/weight", 2)
        bk, bv = np.split(p(f"{prefix}/bias"), 2)
        cross_k.append(b.op("Unsqueeze", t.linear(x, f"decoder.{i}.cross_k", wk, bk), zero))
        cross_v.append(b.op("Unsqueeze", t.linear(x, f"decoder.{i}.cross_v", wv, bv), zero))
    cross_shape: list[int | str] = [dims.n_text_layer, "n_audio", "T/2", dims.n_text_state]
    b.add_output(b.op("Concat", *cross_k, axis=0), "n_layer_cross_k", FLOAT, cross_shape)
    b.add_output(b.op("Concat", *cross_v, axis=0), "n_layer_cross_v", FLOAT, cross_shape)
    return b.build(metadata)


def _compact_lookup(b: GraphBuilder, table: NDArray[np.float32], tokens: str) -> str:
    """Token embedding lookup from a float16 copy of the table, cast back to float32.

    The lookup reads a few rows per step, but the whole table stays resident: in float32 it
    is most of an int8 decoder's memory (76 MiB of tiny.en's ~100). Whisper's embeddings
    survive float16 exactly enough that transcripts do not change.
    """
    half = b.weight("decoder.embeddings.fp16", table.astype(np.float16))
    return b.op("Cast", b.op("Gather", half, tokens), to=FLOAT)


def build_decoder(weights: Weights, *, own_projection: bool = False) -> onnx.ModelProto:
    """One decoding step over `tokens` at positions offset..offset+n_tokens-1.

    With `own_projection` the output projection gets its own weight rather than sharing
    the embeddings, so that int8 quantisation can reach it, and the lookup reads a float16
    copy of the table (see `_compact_lookup`).
    """
    dims = whisper_dims(weights)
    p = _Params(weights)
    b = GraphBuilder("whisper_decoder")
    t = Transformer(b, dims.n_text_head, dims.n_text_state)
    cache_shape: list[int | str] = [
        dims.n_text_layer,
        "n_audio",
        dims.n_text_ctx,
        dims.n_text_state,
    ]
    cross_shape: list[int | str] = [dims.n_text_layer, "n_audio", "T/2", dims.n_text_state]
    tokens = b.add_input("tokens", INT64, ["n_audio", "n_tokens"])
    k_cache = b.add_input("in_n_layer_self_k_cache", FLOAT, cache_shape)
    v_cache = b.add_input("in_n_layer_self_v_cache", FLOAT, cache_shape)
    cross_k = b.add_input("n_layer_cross_k", FLOAT, cross_shape)
    cross_v = b.add_input("n_layer_cross_v", FLOAT, cross_shape)
    offset = b.add_input("offset", INT64, [1])

    n_new = b.op("Slice", b.op("Shape", tokens), b.const_i64([1]), b.const_i64([2]))
    end = b.op("Add", offset, n_new)
    axis0 = b.const_i64([0])
    positions = b.weight("decoder.positions", p("decoder/position_encodings/encodings"))
    if own_projection:
        embedded = _compact_lookup(b, p("decoder/embeddings/weight"), tokens)
    else:
        embeddings = b.weight("decoder.embeddings", p("decoder/embeddings/weight"))
        embedded = b.op("Gather", embeddings, tokens)
    x = b.op("Add", embedded, b.op("Slice", positions, offset, end, axis0))
    mask = t.causal_mask(offset, end)
    past_end = b.const_i64([dims.n_text_ctx])
    new_k, new_v = [], []
    for i in range(dims.n_text_layer):
        prefix = f"decoder/layer_{i}"
        layer = b.const_i64([i])
        _, q, k, v = _self_attention_block(t, p, x, f"{prefix}/self_attention")
        # Attention reads only the filled prefix of the cache; the full-size output cache
        # is assembled once for all layers below, so each step copies it only once.
        layer_end = b.const_i64([i + 1])
        history = []
        for cache, fresh in ((k_cache, k), (v_cache, v)):
            past = b.op(
                "Slice",
                cache,
                b.const_i64([i, 0]),
                b.op("Concat", layer_end, offset, axis=0),
                b.const_i64([0, 2]),
            )
            history.append(b.op("Concat", b.op("Squeeze", past, axis0), fresh, axis=1))
        keys, values = history
        new_k.append(b.op("Unsqueeze", k, axis0))
        new_v.append(b.op("Unsqueeze", v, axis0))
        attended = t.attention(q, keys, values, mask)
        out = t.linear(
            attended,
            f"{prefix}.self_out",
            p(f"{prefix}/self_attention/linear_1/weight"),
            p(f"{prefix}/self_attention/linear_1/bias"),
        )
        x = b.op("Add", x, out)

        cross = f"{prefix}/attention"
        h = t.layer_norm(
            x, f"{prefix}.cross_ln", p(f"{cross}/layer_norm/gamma"), p(f"{cross}/layer_norm/beta")
        )
        cq = t.linear(
            h, f"{prefix}.cross_q", p(f"{cross}/linear_0/weight"), p(f"{cross}/linear_0/bias")
        )
        ck = b.op("Squeeze", b.op("Gather", cross_k, layer, axis=0), axis0)
        cv = b.op("Squeeze", b.op("Gather", cross_v, layer, axis=0), axis0)
        attended = t.attention(cq, ck, cv)
        out = t.linear(
            attended,
            f"{prefix}.cross_out",
            p(f"{cross}/linear_2/weight"),
            p(f"{cross}/linear_2/bias"),
        )
        x = _feed_forward(t, p, b.op("Add", x, out), f"{prefix}/ffn")

    x = t.layer_norm(x, "decoder.ln", p("decoder/layer_norm/gamma"), p("decoder/layer_norm/beta"))
    flat = b.op("Reshape", x, b.const_i64([-1, dims.n_text_state]))
    if own_projection:
        # A separate [state, vocab] copy that dynamic quantisation turns into int8: the
        # projection is the largest matrix a decoding step touches.
        logits_flat = t.linear(flat, "decoder.projection", p("decoder/embeddings/weight"), None)
    else:
        # Shares the embedding matrix instead of storing a transposed copy.
        logits_flat = b.op("Gemm", flat, embeddings, transB=1)
    batch_and_tokens = b.op("Shape", tokens)
    logits_shape = b.op("Concat", batch_and_tokens, b.const_i64([dims.n_vocab]), axis=0)
    logits = b.op("Reshape", logits_flat, logits_shape)
    b.add_output(logits, "logits", FLOAT, ["n_audio", "n_tokens", dims.n_vocab])
    axis2 = b.const_i64([2])
    for cache, layers, name in (
        (k_cache, new_k, "out_n_layer_self_k_cache"),
        (v_cache, new_v, "out_n_layer_self_v_cache"),
    ):
        before = b.op("Slice", cache, axis0, offset, axis2)
        after = b.op("Slice", cache, end, past_end, axis2)
        updated = b.op("Concat", before, b.op("Concat", *layers, axis=0), after, axis=2)
        b.add_output(updated, name, FLOAT, cache_shape)
    return b.build()


# --- tokens and metadata -------------------------------------------------------------


def _byte_decoder() -> dict[str, int]:
    """Inverse of the byte-level BPE alphabet: printable bytes stand for themselves, the
    rest are shifted past 255 in byte order."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    mapping = {chr(byte): byte for byte in printable}
    shifted = 0
    for byte in range(256):
        if byte not in printable:
            mapping[chr(256 + shifted)] = byte
            shifted += 1
    return mapping


def read_vocabulary(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1] if path.exists() else []


def token_lines(vocabulary: list[str], eot: int) -> Iterator[str]:
    """`<base64 bytes> <id>` for every text token (ids below end-of-text)."""
    decoder = _byte_decoder()
    for token_id, token in enumerate(vocabulary[:eot]):
        raw = bytes(decoder[ch] for ch in token)
        yield f"{base64.b64encode(raw).decode('ascii')} {token_id}"


def _special(ids: dict[str, int], *names: str) -> int:
    for name in names:
        if name in ids:
            return ids[name]
    raise CorruptError(f"vocabulary lacks {names[0]}")


def whisper_metadata(
    dims: WhisperDims, vocabulary: list[str], config: dict[str, Any], model_type: str
) -> dict[str, str]:
    """The encoder metadata sherpa-onnx's Whisper recogniser reads."""
    ids = {token: i for i, token in enumerate(vocabulary) if token.startswith("<|")}
    eot = _special(ids, "<|endoftext|>")
    sot = _special(ids, "<|startoftranscript|>")
    transcribe = _special(ids, "<|transcribe|>")
    multilingual = dims.n_vocab >= 51865
    lang_ids = [int(i) for i in config.get("lang_ids", [])] if multilingual else []
    codes = [vocabulary[i][2:-2] for i in lang_ids]
    sot_sequence = [sot, lang_ids[codes.index("en")], transcribe] if multilingual else [sot]
    non_speech = [int(i) for i in config.get("suppress_ids", []) if int(i) < eot]
    values: dict[str, Any] = {
        "model_type": model_type,
        "version": "1",
        "maintainer": "voxtray",
        **asdict(dims),
        "sot": sot,
        "sot_index": 0,
        "sot_sequence": ",".join(map(str, sot_sequence)),
        "eot": eot,
        "blank_id": vocabulary.index("Ġ"),
        "no_speech": _special(ids, "<|nospeech|>", "<|nocaptions|>"),
        "no_timestamps": _special(ids, "<|notimestamps|>"),
        "sot_prev": _special(ids, "<|startofprev|>"),
        "sot_lm": _special(ids, "<|startoflm|>"),
        "translate": _special(ids, "<|translate|>"),
        "transcribe": transcribe,
        "non_speech_tokens": ",".join(map(str, non_speech)),
        "is_multilingual": int(multilingual),
        "all_language_tokens": ",".join(map(str, lang_ids)),
        "all_language_codes": ",".join(codes),
    }
    return {key: str(value) for key, value in values.items()}


# --- the conversion -------------------------------------------------------------------


@dataclass(frozen=True)
class WhisperOnnxFiles:
    encoder: Path
    decoder: Path
    encoder_int8: Path | None
    decoder_int8: Path | None
    tokens: Path

    def all(self) -> list[Path]:
        return [path for path in asdict(self).values() if path is not None]


def onnx_file_names(prefix: str) -> dict[str, str]:
    return {
        "encoder": f"{prefix}-encoder.onnx",
        "decoder": f"{prefix}-decoder.onnx",
        "encoder_int8": f"{prefix}-encoder.int8.onnx",
        "decoder_int8": f"{prefix}-decoder.int8.onnx",
        "tokens": f"{prefix}-tokens.txt",
    }


def convert_whisper(
    ct2_dir: Path,
    out_dir: Path,
    prefix: str,
    *,
    int8: bool = True,
    step: StepFn | None = None,
) -> WhisperOnnxFiles:
    """Convert a CTranslate2 Whisper model directory into sherpa-onnx's ONNX layout.

    Args:
        ct2_dir: Folder with `model.bin`, `config.json` and `vocabulary.txt`.
        out_dir: Existing folder the ONNX files are written into.
        prefix: File name prefix, e.g. "tiny.en" gives `tiny.en-encoder.onnx`.
        int8: Also write dynamically quantised int8 encoder and decoder.
        step: Called with a short description before each stage.

    Returns:
        The paths written.

    Raises:
        NotFoundError: A source file is missing.
        CorruptError: The source is not a CTranslate2 Whisper model.
    """
    report = step or (lambda _message: None)
    for required in ("model.bin", "config.json", "vocabulary.txt"):
        if not (ct2_dir / required).is_file():
            raise NotFoundError(f"{ct2_dir / required} is missing")
    report("reading CTranslate2 weights")
    spec, weights = read_ct2_model(ct2_dir / "model.bin")
    if spec != "WhisperSpec":
        raise CorruptError(f"{ct2_dir / 'model.bin'} holds a {spec}, not a Whisper model")
    vocabulary = read_vocabulary(ct2_dir / "vocabulary.txt")
    config = json.loads((ct2_dir / "config.json").read_text(encoding="utf-8"))
    dims = whisper_dims(weights)
    metadata = whisper_metadata(dims, vocabulary, config, f"whisper-{prefix}")
    names = onnx_file_names(prefix)
    paths = {key: out_dir / name for key, name in names.items()}

    report("building encoder")
    _save(build_encoder(weights, metadata), paths["encoder"])
    report("building decoder")
    _save(build_decoder(weights), paths["decoder"])
    with paths["tokens"].open("w", encoding="utf-8") as stream:
        stream.writelines(line + "\n" for line in token_lines(vocabulary, int(metadata["eot"])))
    if int8:
        report("quantising to int8")
        quantize_int8(paths["encoder"], paths["encoder_int8"])
        unquantized = out_dir / f".{names['decoder_int8']}.fp32"
        _save(build_decoder(weights, own_projection=True), unquantized)
        try:
            quantize_int8(unquantized, paths["decoder_int8"])
        finally:
            unquantized.unlink(missing_ok=True)
    return WhisperOnnxFiles(
        encoder=paths["encoder"],
        decoder=paths["decoder"],
        encoder_int8=paths["encoder_int8"] if int8 else None,
        decoder_int8=paths["decoder_int8"] if int8 else None,
        tokens=paths["tokens"],
    )


def _save(model: onnx.ModelProto, path: Path) -> None:
    onnx.checker.check_model(model)
    onnx.save_model(model, str(path))
