"""The torch-free Whisper conversion against CTranslate2 itself, on the same weights."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import onnx
import pytest
from numpy.typing import NDArray

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.recognition import BELLY, BELLY_WER, assert_heard
from voxtray.audio.features import log_mel_spectrogram
from voxtray.models.ct2 import read_ct2_model
from voxtray.models.store import InstalledModel

ctranslate2 = pytest.importorskip("ctranslate2")
ort = pytest.importorskip("onnxruntime")

CLIP = (
    SPEECH_DIR / "wav" / "ls_1089-134686-0001.wav"
)  # "stuff it into you his belly counselled him"
SOT, EOT, NO_TIMESTAMPS = 50257, 50256, 50362


def _session(path: Path) -> object:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def mel() -> NDArray[np.float32]:
    if not CLIP.is_file():
        pytest.skip(f"{CLIP} not found")
    padded = log_mel_spectrogram(read_wav(CLIP), padding=16000 * 30)[:, :3000]
    return np.ascontiguousarray(padded[None])


@pytest.fixture(scope="module")
def ct2_model(tiny_en: InstalledModel) -> object:
    return ctranslate2.models.Whisper(
        str(tiny_en.path / "ct2"), device="cpu", compute_type="float32"
    )


@pytest.fixture(scope="module")
def onnx_cross(tiny_en: InstalledModel, mel: NDArray[np.float32]) -> list[NDArray[np.float32]]:
    encoder = _session(tiny_en.variant_files("fp32")["encoder"])
    return list(encoder.run(None, {"mel": mel}))  # type: ignore[attr-defined]


def _log_softmax(x: NDArray[np.float32]) -> NDArray[np.float32]:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def test_encoder_cross_kv_match_ctranslate2(
    tiny_en: InstalledModel,
    ct2_model: object,
    mel: NDArray[np.float32],
    onnx_cross: list[NDArray[np.float32]],
) -> None:
    encoded = np.asarray(
        ct2_model.encode(ctranslate2.StorageView.from_array(mel), to_cpu=True)  # type: ignore[attr-defined]
    )
    _, weights = read_ct2_model(tiny_en.path / "ct2" / "model.bin")
    cross_k, cross_v = onnx_cross
    assert cross_k.shape == (4, 1, 1500, 384)
    for layer in range(4):
        kv_weight = weights[f"decoder/layer_{layer}/attention/linear_1/weight"].astype(np.float32)
        kv_bias = weights[f"decoder/layer_{layer}/attention/linear_1/bias"].astype(np.float32)
        expected = encoded[0] @ kv_weight.T + kv_bias
        np.testing.assert_allclose(cross_k[layer, 0], expected[:, :384], atol=2e-3, rtol=1e-3)
        np.testing.assert_allclose(cross_v[layer, 0], expected[:, 384:], atol=2e-3, rtol=1e-3)


def test_first_step_logits_match_ctranslate2(
    tiny_en: InstalledModel,
    ct2_model: object,
    mel: NDArray[np.float32],
    onnx_cross: list[NDArray[np.float32]],
) -> None:
    decoder = _session(tiny_en.variant_files("fp32")["decoder"])
    cache = np.zeros((4, 1, 448, 384), np.float32)
    prompt = [SOT, NO_TIMESTAMPS]
    logits, k_cache, _ = decoder.run(  # type: ignore[attr-defined]
        None,
        {
            "tokens": np.array([prompt], np.int64),
            "in_n_layer_self_k_cache": cache,
            "in_n_layer_self_v_cache": cache,
            "n_layer_cross_k": onnx_cross[0],
            "n_layer_cross_v": onnx_cross[1],
            "offset": np.array([0], np.int64),
        },
    )
    result = ct2_model.generate(  # type: ignore[attr-defined]
        ctranslate2.StorageView.from_array(mel),
        [prompt],
        beam_size=1,
        max_length=3,
        return_logits_vocab=True,
        suppress_blank=False,
        suppress_tokens=[],
    )[0]
    expected = np.asarray(result.logits[0])[0]
    ours = logits[0, -1]
    assert ours.shape == expected.shape == (51864,)
    np.testing.assert_allclose(ours, expected, atol=2e-3, rtol=1e-3)
    assert int(ours.argmax()) == result.sequences_ids[0][0]
    # Only the two prompt positions of the cache were written.
    assert np.abs(k_cache[:, :, :2]).max() > 0
    assert np.abs(k_cache[:, :, 2:]).max() == 0


def test_greedy_decode_with_cache_reads_the_clip(
    tiny_en: InstalledModel, mel: NDArray[np.float32], onnx_cross: list[NDArray[np.float32]]
) -> None:
    """Token-by-token decoding through the KV cache and `offset` gives the clip's words."""
    decoder = _session(tiny_en.variant_files("fp32")["decoder"])
    vocab = (tiny_en.path / "tiny.en-tokens.txt").read_text(encoding="utf-8").splitlines()
    cache_k = cache_v = np.zeros((4, 1, 448, 384), np.float32)
    tokens, offset, text_ids = [SOT, NO_TIMESTAMPS], 0, []
    for _ in range(40):
        logits, cache_k, cache_v = decoder.run(  # type: ignore[attr-defined]
            None,
            {
                "tokens": np.array([tokens], np.int64),
                "in_n_layer_self_k_cache": cache_k,
                "in_n_layer_self_v_cache": cache_v,
                "n_layer_cross_k": onnx_cross[0],
                "n_layer_cross_v": onnx_cross[1],
                "offset": np.array([offset], np.int64),
            },
        )
        offset += len(tokens)
        best = int(logits[0, -1].argmax())
        if best == EOT:
            break
        text_ids.append(best)
        tokens = [best]
    text = b"".join(base64.b64decode(vocab[i].split()[0]) for i in text_ids).decode()
    assert_heard(BELLY, text, BELLY_WER)


def test_encoder_accepts_trimmed_input(tiny_en: InstalledModel, mel: NDArray[np.float32]) -> None:
    encoder = _session(tiny_en.variant_files("int8")["encoder"])
    cross_k, _ = encoder.run(None, {"mel": np.ascontiguousarray(mel[:, :, :1000])})  # type: ignore[attr-defined]
    assert cross_k.shape == (4, 1, 500, 384)


def test_int8_agrees_with_fp32(tiny_en: InstalledModel, mel: NDArray[np.float32]) -> None:
    outputs = []
    for precision in ("fp32", "int8"):
        files = tiny_en.variant_files(precision)
        cross_k, cross_v = _session(files["encoder"]).run(None, {"mel": mel})  # type: ignore[attr-defined]
        cache = np.zeros((4, 1, 448, 384), np.float32)
        logits = _session(files["decoder"]).run(  # type: ignore[attr-defined]
            ["logits"],
            {
                "tokens": np.array([[SOT, NO_TIMESTAMPS]], np.int64),
                "in_n_layer_self_k_cache": cache,
                "in_n_layer_self_v_cache": cache,
                "n_layer_cross_k": cross_k,
                "n_layer_cross_v": cross_v,
                "offset": np.array([0], np.int64),
            },
        )[0]
        outputs.append(_log_softmax(logits[0, -1]))
    fp32, int8 = outputs
    assert int(fp32.argmax()) == int(int8.argmax())
    # 7-bit weights (reduced range, exact on every CPU) follow fp32 a little less closely
    # than 8-bit ones (0.979 against 0.98+ on the first step here); what counts is the WER,
    # which stays within half a point of fp32 (tests/models/test_int8_everywhere.py).
    assert np.corrcoef(fp32, int8)[0, 1] > 0.97
    assert (
        tiny_en.variant_files("int8")["decoder"].stat().st_size
        < 0.65 * tiny_en.variant_files("fp32")["decoder"].stat().st_size
    )
    assert (
        tiny_en.variant_files("int8")["encoder"].stat().st_size
        < 0.4 * tiny_en.variant_files("fp32")["encoder"].stat().st_size
    )


def test_int8_decoder_looks_tokens_up_in_float16(tiny_en: InstalledModel) -> None:
    # The float32 table alone would be 76 MiB of the running decoder's memory.
    model = onnx.load(str(tiny_en.variant_files("int8")["decoder"]))
    tables = {
        init.name: init.data_type
        for init in model.graph.initializer
        if list(init.dims) in ([51864, 384], [384, 51864])
    }
    assert sorted(tables.values()) == sorted([onnx.TensorProto.FLOAT16, onnx.TensorProto.INT8])


def test_metadata_sherpa_reads(tiny_en: InstalledModel) -> None:
    model = onnx.load(str(tiny_en.variant_files("int8")["encoder"]), load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["model_type"] == "whisper-tiny.en"
    assert (meta["sot"], meta["eot"], meta["no_timestamps"]) == ("50257", "50256", "50362")
    assert meta["sot_sequence"] == "50257"
    assert meta["is_multilingual"] == "0"
    assert meta["blank_id"] == "220"
    assert (meta["n_text_layer"], meta["n_text_state"], meta["n_audio_ctx"]) == ("4", "384", "1500")
    non_speech = [int(i) for i in meta["non_speech_tokens"].split(",")]
    assert 1 in non_speech
    assert all(i < 50256 for i in non_speech)


def test_multilingual_metadata(whisper_base: InstalledModel) -> None:
    model = onnx.load(str(whisper_base.variant_files("int8")["encoder"]), load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["is_multilingual"] == "1"
    assert meta["sot_sequence"] == "50258,50259,50359"  # sot, <|en|>, <|transcribe|>
    codes = meta["all_language_codes"].split(",")
    assert codes[:3] == ["en", "zh", "de"]
    assert len(codes) == len(meta["all_language_tokens"].split(","))


def test_tokens_file_is_base64_of_token_bytes(tiny_en: InstalledModel) -> None:
    lines = (tiny_en.path / "tiny.en-tokens.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 50256
    table = {int(i): base64.b64decode(b64) for b64, i in (line.split() for line in lines)}
    assert table[262] == b" the"
    assert table[0] == b"!"
    assert table[198] == b"\n"


def test_truncated_ct2_file_is_reported(tmp_path: Path, tiny_en: InstalledModel) -> None:
    from voxtray.errors import CorruptError

    source = tiny_en.path / "ct2" / "model.bin"
    truncated = tmp_path / "model.bin"
    with source.open("rb") as stream:
        truncated.write_bytes(stream.read(1 << 20))
    with pytest.raises(CorruptError, match="truncated"):
        read_ct2_model(truncated)
