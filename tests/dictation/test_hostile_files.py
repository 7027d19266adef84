"""Files and settings the app reads, damaged or absurd: kept dictation audio cut inside a
sample or replaced by audio of another shape, FIFOs in the journal folder, and a 32 kB
vocabulary entry."""

from __future__ import annotations

import os
import threading
import wave
from pathlib import Path

import numpy as np
import pytest

from voxtray.dictation.journal import Journal, Unfinished
from voxtray.errors import DiskError
from voxtray.history.audio import AudioArchive
from voxtray.inference.recognizers.bpe import BytePairEncoder
from voxtray.inference.recognizers.whisper_vocab import _read_tokens
from voxtray.text.vocabulary import MAX_ENTRY_CHARS, parse_vocabulary

pytestmark = [pytest.mark.faults, pytest.mark.hostile]


def test_kept_audio_cut_inside_its_last_sample_is_read(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    path = archive.store(7, np.full(1000, 0.25, dtype=np.float32))
    assert path is not None
    with path.open("r+b") as stream:  # the header still promises 1000 samples
        stream.truncate(path.stat().st_size - 1)
    samples = archive.load(7)
    assert samples.size == 999
    assert np.allclose(samples, 0.25, atol=1e-3)


def test_kept_audio_of_another_shape_is_refused_in_one_line(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    path = archive.store(8, np.zeros(1000, dtype=np.float32))
    assert path is not None
    with wave.open(str(path), "wb") as stream:
        stream.setnchannels(2)
        stream.setsampwidth(2)
        stream.setframerate(44100)
        stream.writeframes(bytes(4000))
    with pytest.raises(DiskError, match="not the 16 kHz mono 16-bit audio"):
        archive.load(8)


def _encoder() -> BytePairEncoder:
    tokens = Path.home() / ".cache/voxtray-test/models/whisper-tiny.en/tiny.en-tokens.txt"
    if not tokens.is_file():
        pytest.skip("whisper-tiny.en is not in the test store")
    return BytePairEncoder(_read_tokens(tokens), 50256)


@pytest.mark.timeout(60)  # the encoder once took 46 s on such an entry: a hang guard
def test_a_32_kb_vocabulary_entry_costs_no_start_up_time() -> None:
    encoder = _encoder()
    entry = "supercalifragilistic" * 1640  # 32 kB, no spaces
    # Longer than any name: left out of the vocabulary, so start-up never encodes it.
    assert parse_vocabulary(f"Voxtray, {entry}, Kubernetes") == ("Voxtray", "Kubernetes")
    assert len(entry) > MAX_ENTRY_CHARS
    # The encoder alone, as another caller could use it, still ends and round-trips.
    tokens = encoder.encode(" " + entry)
    assert tokens


def test_long_pieces_split_only_where_no_token_reaches() -> None:
    encoder = _encoder()
    text = " Voxtray transcribes Kubernetes, naïve café"
    assert encoder.encode(text * 3) == encoder.encode(text) * 3


def test_fifos_in_the_journal_folder_do_not_block_start_up(tmp_path: Path) -> None:
    folder = tmp_path / "journal"
    folder.mkdir()
    os.mkfifo(folder / "20260101T000000000000Z-1-1.f32")
    os.mkfifo(folder / "20260101T000000000000Z-1-2.json")
    (folder / "20260101T000000000000Z-1-2.f32").write_bytes(bytes(8))
    found: list[list[Unfinished]] = []
    reader = threading.Thread(target=lambda: found.append(Journal(folder).unfinished()))
    reader.daemon = True  # the old code never came back from a FIFO
    reader.start()
    reader.join(timeout=5)
    assert found, "reading the journal blocked on a FIFO"
    entries = found[0]
    assert len(entries) == 2
    audio = [entry.audio().size for entry in entries]
    assert sorted(audio) == [0, 2]
