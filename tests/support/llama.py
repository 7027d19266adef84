"""A real llama.cpp server for clean-up tests: llama-cpp-python's OpenAI-compatible server
(from its own venv, `.venv-llama`, which packaging/dev.sh installs from a wheel built once
and kept in the test store) serving a tiny GGUF model written here with the `gguf`
package: a llama of two layers with random weights and a small vocabulary, so every
answer is nonsense made of real words."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.support.audio import REPO
from tests.support.serving import free_port, wait_for_port

LLAMA_VENV = Path(os.environ.get("VOXTRAY_LLAMA_VENV", REPO / ".venv-llama"))
LLAMA_PYTHON = LLAMA_VENV / "bin" / "python"

# ChatML, as many instruction models ship it.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ("<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
WORDS = [
    "the", "budget", "send", "friday", "people", "twenty", "five", "think", "we", "should",
    "okay", "sure", "here", "is", "cleaned", "text", "note", "meeting", "report", "and", "to",
    "by", "of", "a", "it", "you", "clean", "up", "dictated", "transcript", "keep", "every",
    "word", "name", "number"
]  # fmt: skip
EMBED, HEADS, LAYERS, FEED_FORWARD, CONTEXT = 64, 4, 2, 128, 2048


@dataclass(frozen=True)
class TinyModel:
    path: Path
    vocabulary: int


def _vocabulary() -> tuple[list[str], list[float], list[int]]:
    from gguf import TokenType

    tokens = list(SPECIAL)
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.CONTROL] * 2
    tokens += [f"<0x{byte:02X}>" for byte in range(256)]
    types += [TokenType.BYTE] * 256
    letters = [chr(code) for code in range(ord("a"), ord("z") + 1)] + list(".,?!")
    every = ["▁", *letters, *(f"▁{letter}" for letter in letters), *(f"▁{w}" for w in WORDS)]
    pieces = list(dict.fromkeys(every))  # a token twice is a broken vocabulary
    tokens += pieces
    types += [TokenType.NORMAL] * len(pieces)
    # SentencePiece merges by score: longer pieces first.
    scores = [0.0] * (len(SPECIAL) + 256) + [float(len(piece)) for piece in pieces]
    return tokens, scores, [int(kind) for kind in types]


def write_tiny_model(path: Path, seed: int = 7) -> TinyModel:
    """A llama-architecture GGUF of random float32 weights (well under 1 MB)."""
    from gguf import GGUFWriter

    tokens, scores, types = _vocabulary()
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = GGUFWriter(str(path), "llama")
    writer.add_name("voxtray-test-random")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(0)  # all float32
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_chat_template(CHAT_TEMPLATE)
    vocabulary = len(tokens)
    writer.add_tensor("token_embd.weight", weights(vocabulary, EMBED, scale=1.0))
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBED, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weights(EMBED, EMBED))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBED, np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(FEED_FORWARD, EMBED))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(FEED_FORWARD, EMBED))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(EMBED, FEED_FORWARD))
    writer.add_tensor("output_norm.weight", np.ones(EMBED, np.float32))
    writer.add_tensor("output.weight", weights(vocabulary, EMBED, scale=1.0))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyModel(path, vocabulary)


def llama_server_missing() -> str | None:
    """Why the llama.cpp server cannot run here, or None."""
    if not LLAMA_PYTHON.exists():
        return f"llama-cpp-python's server is not installed in {LLAMA_VENV} (packaging/dev.sh test)"
    probe = subprocess.run(
        [str(LLAMA_PYTHON), "-c", "import llama_cpp.server.app"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode != 0:
        return f"llama-cpp-python's server does not import: {probe.stderr.strip()[-300:]}"
    return None


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@contextlib.contextmanager
def serving_llama(model: TinyModel, log: Path) -> Iterator[LlamaServer]:
    """`python -m llama_cpp.server` on 127.0.0.1 with one thread, stopped on leaving."""
    port = free_port()
    command = [
        str(LLAMA_PYTHON), "-m", "llama_cpp.server", "--model", str(model.path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
        "--n_threads", "1", "--n_threads_batch", "1", "--seed", "7",
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=log.parent)
    server = LlamaServer(process, port, log)
    try:
        wait_for_port(port, process, timeout_s=120)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
