"""Tiny generated ONNX models that sherpa-onnx loads as NeMo CTC, NeMo transducer and
Moonshine models.

No real Parakeet or Moonshine weights can be fetched in the test environment, so these
fakes carry exactly the input/output layout and metadata that sherpa-onnx's C++ code asks
for (offline-nemo-enc-dec-ctc-model.cc, offline-transducer-nemo-model.cc,
offline-moonshine-model.cc), with hand-set weights that decode to known text:

* NeMo CTC and transducer see 80 log-mel bins. A tone in the low half of the bins
  (below about 2 kHz) reads as "hello", one in the high half as "world", and silence as
  nothing. So LOW_TONE_HZ then HIGH_TONE_HZ decodes to "hello world", which only works
  if sherpa-onnx computed real mel features and fed them to the model in its layout.
* Moonshine sees raw audio through its own preprocessor: any loud enough audio decodes
  to "hello world" and silence to nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOW_TONE_HZ = 1000.0
HIGH_TONE_HZ = 5000.0
FEATURE_DIM = 80
SUBSAMPLING = 4
# A bin group "hears" a tone when its loudest log-mel value passes this. Measured with
# sherpa-onnx's NeMo features (librosa-style mel, no normalisation): digital silence sits
# at -16, white noise at -54 dBFS near -9, a 0.5-amplitude 1 kHz tone near +2 in the low
# bins and a 5 kHz one near +4 in the high bins, while a faded tone's leakage into the
# other half stays below -6.
LOG_MEL_THRESHOLD = -3.0
# Moonshine frames are 384 samples (24 ms at 16 kHz), as in the Moonshine paper; a frame
# counts as speech when its log mean power passes this (white noise at -54 dBFS: -12.4,
# a 0.5-amplitude tone: -2.1).
MOONSHINE_FRAME = 384
LOG_POWER_THRESHOLD = -7.0

OPSET = 17
# The onnx package stamps its own newest IR version, which an older onnxruntime (as
# bundled with older sherpa-onnx releases) refuses; 8 is the IR version of opset 17.
IR_VERSION = 8

# The joiner lowers the logit of the token the prediction net last emitted by this much,
# so one tone burst yields one token, not one per frame.
REPEAT_PENALTY = 100.0
NEVER = -1000.0

Constants = dict[str, np.ndarray]
"""Initializers by name."""


def _save(
    path: Path,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    constants: Constants,
    metadata: dict[str, str] | None = None,
) -> Path:
    initializers = [numpy_helper.from_array(value, name) for name, value in constants.items()]
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def _tensor(name: str, dtype: int, shape: list[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def _f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _write_tokens(path: Path, symbols: list[str]) -> Path:
    path.write_text("".join(f"{s} {i}\n" for i, s in enumerate(symbols)), encoding="utf-8")
    return path


def _band_score_nodes(features: str, out: str) -> tuple[list[onnx.NodeProto], Constants]:
    """(N, 80, T) log-mel -> (N, 2, ceil(T/4)): per frame, how far the loudest low bin and
    the loudest high bin are above LOG_MEL_THRESHOLD, keeping every 4th frame."""
    half = FEATURE_DIM // 2
    constants = {
        "band_zero": _i64(0),
        "band_half": _i64(half),
        "band_end": _i64(FEATURE_DIM),
        "band_axis": _i64(1),
        "time_axis": _i64(2),
        "time_step": _i64(SUBSAMPLING),
        "time_end": _i64(2**62),
        "band_threshold": _f32(LOG_MEL_THRESHOLD),
    }
    nodes = [
        helper.make_node("Slice", [features, "band_zero", "band_half", "band_axis"], ["low"]),
        helper.make_node("Slice", [features, "band_half", "band_end", "band_axis"], ["high"]),
        helper.make_node("ReduceMax", ["low"], ["low_max"], axes=[1], keepdims=1),
        helper.make_node("ReduceMax", ["high"], ["high_max"], axes=[1], keepdims=1),
        helper.make_node("Concat", ["low_max", "high_max"], ["bands"], axis=1),
        helper.make_node("Sub", ["bands", "band_threshold"], ["scores"]),
        helper.make_node(
            "Slice", ["scores", "band_zero", "time_end", "time_axis", "time_step"], [out]
        ),
    ]
    return nodes, constants


def make_nemo_ctc(directory: Path) -> dict[str, Path]:
    """model.onnx + tokens.txt of a NeMo EncDecCTCModelBPE: audio_signal (N, 80, T) and
    length (N,) in, logprobs (N, T', 3) out; tokens ▁hello, ▁world, <blk> (last)."""
    directory.mkdir(parents=True, exist_ok=True)
    nodes, constants = _band_score_nodes("audio_signal", "scores_sub")
    constants["zero"] = _f32(0.0)
    nodes += [
        # Blank's logit is 0, so a word wins exactly while its band is above threshold.
        helper.make_node("ReduceMax", ["scores_sub"], ["any"], axes=[1], keepdims=1),
        helper.make_node("Mul", ["any", "zero"], ["blank"]),
        helper.make_node("Concat", ["scores_sub", "blank"], ["logits_nct"], axis=1),
        helper.make_node("Transpose", ["logits_nct"], ["logits"], perm=[0, 2, 1]),
        helper.make_node("LogSoftmax", ["logits"], ["logprobs"], axis=-1),
    ]
    model = _save(
        directory / "model.onnx",
        nodes,
        [
            _tensor("audio_signal", TensorProto.FLOAT, ["N", FEATURE_DIM, "T"]),
            _tensor("length", TensorProto.INT64, ["N"]),
        ],
        [_tensor("logprobs", TensorProto.FLOAT, ["N", "T_out", 3])],
        constants,
        {
            "model_type": "EncDecCTCModelBPE",
            "vocab_size": "3",
            "subsampling_factor": str(SUBSAMPLING),
            # Empty: sherpa-onnx hands the raw log-mel to the model, which the fixed
            # threshold needs (per_feature normalisation would erase absolute levels).
            "normalize_type": "",
            "is_giga_am": "0",
        },
    )
    tokens = _write_tokens(directory / "tokens.txt", ["▁hello", "▁world", "<blk>"])
    return {"model": model, "tokens": tokens}


def _transducer_encoder(path: Path) -> Path:
    nodes, constants = _band_score_nodes("audio_signal", "outputs")
    constants["round_up"] = _i64(SUBSAMPLING - 1)
    constants["factor"] = _i64(SUBSAMPLING)
    nodes += [
        # ceil(T / 4), the length of the Slice with step 4.
        helper.make_node("Add", ["length", "round_up"], ["length_up"]),
        helper.make_node("Div", ["length_up", "factor"], ["encoded_lengths"]),
    ]
    return _save(
        path,
        nodes,
        [
            _tensor("audio_signal", TensorProto.FLOAT, ["N", FEATURE_DIM, "T"]),
            _tensor("length", TensorProto.INT64, ["N"]),
        ],
        [
            _tensor("outputs", TensorProto.FLOAT, ["N", 2, "T_out"]),
            _tensor("encoded_lengths", TensorProto.INT64, ["N"]),
        ],
        constants,
        {
            "model_type": "EncDecRNNTBPEModel",
            # NeMo counts the vocabulary without the blank; sherpa-onnx adds one.
            "vocab_size": "2",
            "subsampling_factor": str(SUBSAMPLING),
            "normalize_type": "",
            "pred_rnn_layers": "1",
            "pred_hidden": "2",
            "feat_dim": str(FEATURE_DIM),
            "is_giga_am": "0",
            # No "tdt" in the url: a plain RNN-T joiner with vocab_size + 1 outputs.
            "url": "generated-for-tests",
        },
    )


def _transducer_decoder(path: Path) -> Path:
    # The prediction net's output is the one-hot of the last emitted token (blank: zeros);
    # the LSTM states pass through unchanged.
    constants = {"embedding": np.array([[1, 0], [0, 1], [0, 0]], dtype=np.float32)}
    nodes = [
        helper.make_node("Gather", ["embedding", "targets"], ["embedded"], axis=0),
        helper.make_node("Transpose", ["embedded"], ["outputs"], perm=[0, 2, 1]),
        helper.make_node("Identity", ["target_length"], ["prednet_lengths"]),
        helper.make_node("Identity", ["states.1"], ["states"]),
        helper.make_node("Identity", ["onnx::Slice_3"], ["162"]),
    ]
    state: list[int | str] = ["layers", "N", 2]
    return _save(
        path,
        nodes,
        [
            _tensor("targets", TensorProto.INT32, ["N", 1]),
            _tensor("target_length", TensorProto.INT32, ["N"]),
            _tensor("states.1", TensorProto.FLOAT, state),
            _tensor("onnx::Slice_3", TensorProto.FLOAT, state),
        ],
        [
            _tensor("outputs", TensorProto.FLOAT, ["N", 2, 1]),
            _tensor("prednet_lengths", TensorProto.INT32, ["N"]),
            _tensor("states", TensorProto.FLOAT, state),
            _tensor("162", TensorProto.FLOAT, state),
        ],
        constants,
    )


def _transducer_joiner(path: Path) -> Path:
    constants = {"penalty": _f32(REPEAT_PENALTY), "zero": _f32(0.0)}
    nodes = [
        helper.make_node("Transpose", ["encoder_outputs"], ["enc"], perm=[0, 2, 1]),
        helper.make_node("Transpose", ["decoder_outputs"], ["dec"], perm=[0, 2, 1]),
        helper.make_node("Mul", ["dec", "penalty"], ["repeat"]),
        helper.make_node("Sub", ["enc", "repeat"], ["words"]),
        helper.make_node("ReduceMax", ["words"], ["any"], axes=[2], keepdims=1),
        helper.make_node("Mul", ["any", "zero"], ["blank"]),
        helper.make_node("Concat", ["words", "blank"], ["logits"], axis=2),
        helper.make_node("Unsqueeze", ["logits", "unsqueeze_axis"], ["outputs"]),
    ]
    constants["unsqueeze_axis"] = _i64(2)
    # sherpa-onnx checks the declared last dimension against vocab_size + 1.
    return _save(
        path,
        nodes,
        [
            _tensor("encoder_outputs", TensorProto.FLOAT, ["N", 2, 1]),
            _tensor("decoder_outputs", TensorProto.FLOAT, ["N", 2, 1]),
        ],
        [_tensor("outputs", TensorProto.FLOAT, ["N", 1, 1, 3])],
        constants,
    )


def make_nemo_transducer(directory: Path) -> dict[str, Path]:
    """encoder/decoder/joiner .onnx + tokens.txt of a NeMo EncDecRNNTBPEModel."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "encoder": _transducer_encoder(directory / "encoder.onnx"),
        "decoder": _transducer_decoder(directory / "decoder.onnx"),
        "joiner": _transducer_joiner(directory / "joiner.onnx"),
        "tokens": _write_tokens(directory / "tokens.txt", ["▁hello", "▁world", "<blk>"]),
    }


# Moonshine's token ids: sherpa-onnx hard-codes <s> = 1 and </s> = 2.
MOONSHINE_TOKENS = ["<unk>", "<s>", "</s>", "▁hello", "▁world"]
SOS, EOS, HELLO, WORLD = 1, 2, 3, 4
CACHE_DIM = 4


def _moonshine_preprocessor(path: Path) -> Path:
    """args_0 (1, samples) -> (1, samples // 384, 1): each frame's log mean power."""
    constants = {
        "frame": _i64(MOONSHINE_FRAME),
        "start": _i64(0),
        "sample_axis": _i64(1),
        "frames_shape": _i64(1, -1, MOONSHINE_FRAME),
        "floor": _f32(1e-10),
    }
    nodes = [
        helper.make_node("Shape", ["args_0"], ["samples"], start=1, end=2),
        helper.make_node("Div", ["samples", "frame"], ["frames"]),
        helper.make_node("Mul", ["frames", "frame"], ["whole"]),
        helper.make_node("Slice", ["args_0", "start", "whole", "sample_axis"], ["trimmed"]),
        helper.make_node("Reshape", ["trimmed", "frames_shape"], ["framed"]),
        helper.make_node("Mul", ["framed", "framed"], ["power"]),
        helper.make_node("ReduceMean", ["power"], ["mean_power"], axes=[2], keepdims=1),
        helper.make_node("Add", ["mean_power", "floor"], ["floored"]),
        helper.make_node("Log", ["floored"], ["features"]),
    ]
    return _save(
        path,
        nodes,
        [_tensor("args_0", TensorProto.FLOAT, [1, "num_samples"])],
        [_tensor("features", TensorProto.FLOAT, [1, "T", 1])],
        constants,
    )


def _moonshine_encoder(path: Path) -> Path:
    """args_0 features (1, T, 1), args_1 length (1,) int32 -> (1, T, 1) speech scores."""
    nodes = [helper.make_node("Sub", ["args_0", "threshold"], ["layer_norm"])]
    return _save(
        path,
        nodes,
        [
            _tensor("args_0", TensorProto.FLOAT, [1, "T", 1]),
            _tensor("args_1", TensorProto.INT32, [1]),
        ],
        [_tensor("layer_norm", TensorProto.FLOAT, [1, "T", 1])],
        {"threshold": _f32(LOG_POWER_THRESHOLD)},
    )


def _moonshine_next_token_tables() -> tuple[np.ndarray, np.ndarray]:
    """Logits of the next token given the last one: <s> -> ▁hello if the audio is
    speech, else </s>; ▁hello -> ▁world; anything else -> </s>."""
    size = len(MOONSHINE_TOKENS)
    table = np.full((size, size), NEVER, dtype=np.float32)
    table[:, EOS] = 0.0
    table[SOS, HELLO] = 0.0
    table[HELLO, WORLD] = 1.0
    # After <s>, ▁hello's logit is the clipped speech score, so it beats </s> (0) only
    # for speech.
    gate = np.zeros((size, size), dtype=np.float32)
    gate[SOS, HELLO] = 1.0
    return table, gate


def _moonshine_decoder_nodes() -> tuple[list[onnx.NodeProto], Constants]:
    """Shared by both decoders: args_0 tokens (1, 1) int32, args_1 encoder output ->
    logits (1, 1, vocab) and this step's self-attention key/value rows."""
    table, gate = _moonshine_next_token_tables()
    constants = {
        "table": table,
        "gate": gate,
        # Clip takes scalar bounds.
        "clip_low": np.array(-10.0, dtype=np.float32),
        "clip_high": np.array(10.0, dtype=np.float32),
        "step_embedding": np.eye(len(MOONSHINE_TOKENS), CACHE_DIM, dtype=np.float32),
    }
    nodes = [
        helper.make_node("ReduceMax", ["args_1"], ["speech"], axes=[1, 2], keepdims=0),
        helper.make_node("Clip", ["speech", "clip_low", "clip_high"], ["speech_clipped"]),
        helper.make_node("Gather", ["table", "args_0"], ["base"], axis=0),
        helper.make_node("Gather", ["gate", "args_0"], ["gated"], axis=0),
        helper.make_node("Mul", ["gated", "speech_clipped"], ["boost"]),
        helper.make_node("Add", ["base", "boost"], ["logits"]),
        helper.make_node("Gather", ["step_embedding", "args_0"], ["step"], axis=0),
    ]
    return nodes, constants


def _moonshine_cache_outputs() -> list[onnx.ValueInfoProto]:
    return [
        _tensor("self_key", TensorProto.FLOAT, [1, "seq", CACHE_DIM]),
        _tensor("self_value", TensorProto.FLOAT, [1, "seq", CACHE_DIM]),
        _tensor("cross_key", TensorProto.FLOAT, [1, "T", CACHE_DIM]),
        _tensor("cross_value", TensorProto.FLOAT, [1, "T", CACHE_DIM]),
    ]


def _moonshine_uncached_decoder(path: Path) -> Path:
    nodes, constants = _moonshine_decoder_nodes()
    constants["cross_ones"] = np.ones((1, 1, CACHE_DIM), dtype=np.float32)
    nodes += [
        helper.make_node("Identity", ["step"], ["self_key"]),
        helper.make_node("Identity", ["step"], ["self_value"]),
        # Cross-attention caches are computed once from the encoder output.
        helper.make_node("Mul", ["args_1", "cross_ones"], ["cross_key"]),
        helper.make_node("Identity", ["cross_key"], ["cross_value"]),
    ]
    return _save(
        path,
        nodes,
        [
            _tensor("args_0", TensorProto.INT32, [1, 1]),
            _tensor("args_1", TensorProto.FLOAT, [1, "T", 1]),
            _tensor("args_2", TensorProto.INT32, [1]),
        ],
        [
            _tensor("logits", TensorProto.FLOAT, [1, 1, len(MOONSHINE_TOKENS)]),
            *_moonshine_cache_outputs(),
        ],
        constants,
    )


def _moonshine_cached_decoder(path: Path) -> Path:
    nodes, constants = _moonshine_decoder_nodes()
    nodes += [
        # Self-attention caches grow by one row a step, as a real KV cache does; the
        # Concat fails if sherpa-onnx passed the states back in the wrong order.
        helper.make_node("Concat", ["args_3", "step"], ["self_key"], axis=1),
        helper.make_node("Concat", ["args_4", "step"], ["self_value"], axis=1),
        helper.make_node("Identity", ["args_5"], ["cross_key"]),
        helper.make_node("Identity", ["args_6"], ["cross_value"]),
    ]
    return _save(
        path,
        nodes,
        [
            _tensor("args_0", TensorProto.INT32, [1, 1]),
            _tensor("args_1", TensorProto.FLOAT, [1, "T", 1]),
            _tensor("args_2", TensorProto.INT32, [1]),
            _tensor("args_3", TensorProto.FLOAT, [1, "past", CACHE_DIM]),
            _tensor("args_4", TensorProto.FLOAT, [1, "past", CACHE_DIM]),
            _tensor("args_5", TensorProto.FLOAT, [1, "T", CACHE_DIM]),
            _tensor("args_6", TensorProto.FLOAT, [1, "T", CACHE_DIM]),
        ],
        [
            _tensor("logits", TensorProto.FLOAT, [1, 1, len(MOONSHINE_TOKENS)]),
            *_moonshine_cache_outputs(),
        ],
        constants,
    )


def make_moonshine(directory: Path) -> dict[str, Path]:
    """preprocess/encode/uncached_decode/cached_decode .onnx + tokens.txt of a Moonshine
    (v1) model, the four-file layout sherpa-onnx's from_moonshine takes."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "preprocessor": _moonshine_preprocessor(directory / "preprocess.onnx"),
        "encoder": _moonshine_encoder(directory / "encode.onnx"),
        "uncached_decoder": _moonshine_uncached_decoder(directory / "uncached_decode.onnx"),
        "cached_decoder": _moonshine_cached_decoder(directory / "cached_decode.onnx"),
        "tokens": _write_tokens(directory / "tokens.txt", MOONSHINE_TOKENS),
    }
