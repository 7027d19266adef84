"""The vocabulary wherever a user gives it: `voxtray serve`'s OpenAI `prompt` field, remote
engines, live text's prefixed decoding; and its limits (5,000 entries, one huge entry)."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.audio import clip_path, read_wav
from tests.support.models import ensure_installed
from tests.support.process import run_voxtray
from tests.support.serving import Served, serve_home, start_voxtray
from voxtray.choices import Engine, Precision, Provider
from voxtray.config import Settings
from voxtray.errors import BadInputError
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.recognizers.base import transcribe_with
from voxtray.inference.recognizers.biasing import VocabularyTrie
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer
from voxtray.inference.recognizers.remote_openai import (
    MAX_PROMPT_CHARS,
    RemoteOpenAIRecognizer,
    prompt_field,
)
from voxtray.inference.remote import RemoteSpec, create_remote, spec_from_settings
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.text.vocabulary import MAX_ENTRIES, MAX_ENTRY_CHARS, parse_vocabulary

HESTER = clip_path("ls_triton_1221-135766-0002")
CHOICE = EngineChoice(engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8)
SYLLABLES = "ka lo mi ren tor vax quin dell ph ith son berg ova ski nik ara zen tek lux ify"


def _names(count: int) -> list[str]:
    """Made-up names and terms: one or two words of two to four syllables."""
    rng = random.Random(2)
    syllables = SYLLABLES.split()

    def word() -> str:
        return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))

    return [
        word().capitalize() + (" " + word().capitalize() if i % 3 == 0 else "") if i % 2 else word()
        for i in range(count)
    ]


# --- limits ----------------------------------------------------------------------------


def test_a_list_over_the_limit_is_refused_in_one_line() -> None:
    assert len(parse_vocabulary("\n".join(f"word{i}" for i in range(MAX_ENTRIES)))) == MAX_ENTRIES
    with pytest.raises(BadInputError) as refused:
        parse_vocabulary("\n".join(f"word{i}" for i in range(MAX_ENTRIES + 1)))
    message = str(refused.value)
    assert "\n" not in message
    assert str(MAX_ENTRIES) in message


def test_a_huge_entry_is_left_out_at_once() -> None:
    # Left out before it is encoded: a 32 kB entry once held up the start for 46 s.
    entries = parse_vocabulary("x" * 32_000 + ", Kai, " + "y " * 16_000)
    assert entries == ("Kai",)
    assert parse_vocabulary("a" * MAX_ENTRY_CHARS) == ("a" * MAX_ENTRY_CHARS,)


def test_a_comment_line_is_left_out_whole() -> None:
    assert parse_vocabulary("# names, people (a list)\nAbbie, Kai\n  # more, later\nZed") == (
        "Abbie",
        "Kai",
        "Zed",
    )


def test_the_prompt_field_keeps_what_a_server_takes() -> None:
    assert prompt_field(("Hester Prynne", "Claflin")) == "Hester Prynne, Claflin."
    assert prompt_field(()) == ""
    assert len(prompt_field(tuple(_names(MAX_ENTRIES)) * 3)) <= MAX_PROMPT_CHARS


@pytest.mark.slow
def test_5000_entries_load(tiny_en: InstalledModel) -> None:
    """All of the largest vocabulary goes into the tree; its load time is a benchmark
    figure (docs/benchmarks.md, "Vocabulary"), printed here, not asserted."""
    files = tiny_en.variant_files("int8")
    recognizer = OrtWhisperRecognizer(files["encoder"], files["decoder"], files["tokens"])
    text = "\n".join(_names(MAX_ENTRIES))
    encode = recognizer.vocab.encoder.encode
    best = float("inf")
    for _ in range(5):  # CPU time: the machine's other work is not this one's
        started = time.process_time()
        trie = VocabularyTrie(parse_vocabulary(text), encode, recognizer.vocab.token_bytes)
        best = min(best, time.process_time() - started)
    assert trie.size > MAX_ENTRIES
    print(f"5,000 entries: {1000 * best:.0f} ms of CPU to load")


@pytest.fixture(scope="module")
def env(model_store: ModelStore, tiny_en: InstalledModel) -> dict[str, str]:
    environ = {**os.environ, "VOXTRAY_HOME": str(model_store.root.parent)}
    environ.pop("VOXTRAY_CATALOG", None)
    return environ


@pytest.mark.slow
def test_the_cli_refuses_a_list_over_the_limit(env: dict[str, str], tmp_path: Path) -> None:
    listing = tmp_path / "names.txt"
    listing.write_text("\n".join(f"word{i}" for i in range(MAX_ENTRIES + 1)), encoding="utf-8")
    result = run_voxtray(
        "transcribe",
        str(HESTER),
        "--model",
        "whisper-tiny.en",
        "--vocabulary",
        str(listing),
        env=env,
    )
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0
    assert "at most 5000" in result.stderr


def test_the_trays_remote_engine_gets_the_vocabulary() -> None:
    settings = replace(
        Settings(), remote_url="http://127.0.0.1:9", vocabulary="Hester Prynne\nAbbie"
    )
    spec = spec_from_settings(settings, None)
    assert spec.vocabulary == ("Hester Prynne", "Abbie")
    remote = create_remote(spec)
    assert isinstance(remote, RemoteOpenAIRecognizer)
    assert remote.prompt == "Hester Prynne, Abbie."


# --- live text -------------------------------------------------------------------------


@pytest.mark.slow
def test_live_text_decoding_after_a_prefix_keeps_the_vocabulary(tiny_en: InstalledModel) -> None:
    recognizer = create_recognizer(tiny_en, replace(CHOICE, vocabulary=("Hester Prynne",)))
    audio = read_wav(HESTER)
    # Live text re-decodes the open segment after the words it already agreed on.
    first = transcribe_with(recognizer, audio[: audio.size // 3])
    agreed = first.words[1][1]  # "Yet these"
    again = transcribe_with(recognizer, audio, prefix=first.tokens[:agreed])
    assert again.text.startswith("Yet these")
    assert "Hester Prynne" in again.text


# --- the server's prompt field and remote engines --------------------------------------


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore, tiny_en: InstalledModel
) -> Iterator[Served]:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    ensure_installed(model_store, "silero-vad-v6")
    home = serve_home(tmp_path_factory.mktemp("vocabulary"), model_store)
    server = start_voxtray(home, "--model", tiny_en.name, "--wyoming-port", "0")
    yield server
    server.stop()


@pytest.mark.slow
def test_the_prompt_field_is_the_requests_vocabulary(served: Served) -> None:
    audio = read_wav(HESTER)
    plain = RemoteOpenAIRecognizer(served.url, api_key=served.token, timeout_s=60)
    assert "Prynne" not in plain.transcribe(audio).text
    spec = RemoteSpec(served.url, api_key=served.token, vocabulary=("Hester Prynne", "Claflin"))
    remote = create_remote(spec)
    assert "Hester Prynne" in remote.transcribe(audio).text
    # The next request without a prompt is decoded without it again.
    assert "Prynne" not in plain.transcribe(audio).text


@pytest.mark.slow
def test_a_prompt_over_the_limit_is_a_400(served: Served) -> None:
    httpx = pytest.importorskip("httpx")
    words = ", ".join(f"word{i}" for i in range(MAX_ENTRIES + 1))
    reply = httpx.post(
        served.url + "/v1/audio/transcriptions",
        headers={"Authorization": f"Bearer {served.token}"},
        data={"model": "whisper-1", "prompt": words},
        files={"file": ("a.wav", HESTER.read_bytes(), "audio/wav")},
        timeout=60,
    )
    assert reply.status_code == 400
    assert str(MAX_ENTRIES) in reply.json()["error"]["message"]
