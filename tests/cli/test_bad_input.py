"""Bad input and hostile conditions: each gives a one-line error, a documented exit code
(docs/cli.md, app/voxtray/errors.py ExitCode), and loses or half-writes nothing.

Coverage map: every item of the issue list, then the tests covering it, as FILE: TESTS.
"here" is this file.

1. Corrupted or truncated ONNX
   here: test_truncated_encoder_is_corrupt_exit_4[ort, sherpa] (`voxtray transcribe` on
     a store whose int8 encoder is cut in half),
     test_corrupt_model_error_names_the_repair[ort, sherpa]
   test_sherpa_families.py: test_corrupt_onnx, test_broken_model_in_child_process
   test_cli_models.py: test_install_verify_damage_remove (`models verify`: exit 4, hint)
   test_store.py: test_verify_names_the_damaged_file
2. Missing tokens file
   here: test_missing_tokens_file_is_corrupt_exit_4[ort, sherpa]
   test_sherpa_families.py: test_missing_file (tokens role), test_tokens_role_absent
3. A model of the wrong family for the engine
   here: test_ort_engine_refuses_a_model_of_another_family (exit 2, USAGE)
   test_sherpa_families.py: test_files_of_another_family,
     test_broken_model_in_child_process
4. A corrupt settings file (kept as .bak, defaults used, a warning shown)
   test_config.py: test_corrupt_file_is_kept_as_bak_and_defaults_used,
     test_an_existing_bak_is_never_overwritten,
     test_unreadable_settings_path_gives_defaults_and_a_warning,
     test_load_never_raises_on_garbage (hypothesis)
   here: test_corrupt_settings_warning_reaches_the_tray (the app really shows it)
5. Unreadable, empty and non-audio files
   test_decode.py: test_missing_file, test_directory, test_unreadable_file,
     test_unreadable_file_simulated, test_named_pipe_is_refused_without_blocking,
     test_bad_files, test_zero_samples, test_corrupt_compressed
   test_cli_transcribe.py: test_bad_files_are_one_line_errors_and_the_rest_still_runs
     (exit 7), test_missing_file_alone_is_exit_3
   here: test_unreadable_and_directory_inputs_are_exit_7 (the CLI, in-process)
   test_fuzz.py: test_load_audio_on_arbitrary_bytes, test_load_audio_on_damaged_real_files
6. 0.1 s and 10 min recordings
   here: test_a_tenth_of_a_second_is_empty_text_and_exit_0,
     test_ten_minute_flac_is_segmented_under_25_s (slow)
   test_cli_transcribe.py: test_minutes_long_file_is_segmented (slow, 2.7 min WAV)
   test_decode.py: test_ten_minutes_of_cd_audio_is_fast (slow, decoding only)
7. A microphone missing or vanishing mid-dictation
   test_microphone.py: test_missing_device_is_a_one_line_error, test_no_default_input,
     test_busy_device_is_a_one_line_error,
     test_real_portaudio_missing_device_is_a_one_line_error,
     test_device_lost_mid_utterance_keeps_audio_and_finishes,
     test_device_lost_during_the_tail_still_calls_on_done,
     test_wedged_device_raising_portaudio_error,
     test_begin_after_a_loss_reopens_the_device,
     test_pulseaudio_server_dying_mid_utterance
   here: test_missing_microphone_fails_load_with_one_line_error_exit_3,
     test_microphone_vanishing_mid_dictation_keeps_the_words (the whole Dictation: text
     transcribed, typed and in history; the next start() reopens the device)
8. A hotkey already taken by another program
   test_hotkeys.py: test_xvfb_grab_by_another_program (x11_grab_conflict sees the grab),
     test_conflicts_warn (desktop combinations),
     test_keyboard_backend_real_hook_failure_is_a_voxtray_error
   here: test_hotkey_grabbed_by_another_program_is_reported
9. A download cut off and resumed
   test_download.py: test_interrupted_download_keeps_part_then_resumes,
     test_server_ignoring_range_restarts_from_zero,
     test_complete_part_answered_416_is_finished
   test_store.py: test_url_tarball_install_resumes_after_a_cut
   here: test_cut_download_is_exit_5_then_resumes (the real CLI, twice)
10. A full disk during model install
   test_cli_models.py: test_full_disk_is_one_line_and_exit_6 (RLIMIT_FSIZE; nothing
     left in .staging; a retry works), test_unwritable_home_is_one_line_and_exit_6
   test_download.py: test_full_disk_is_disk_error (/dev/full),
     test_read_only_folder_is_disk_error
   test_archive.py: test_unwritable_destinations_are_disk_errors
11. Two instances started at once
   test_control.py: test_two_instances_starting_at_once_elect_one,
     test_second_server_defers_to_the_first,
     test_stale_socket_from_a_crash_is_replaced
   test_ui.py: test_second_instance_brings_the_first_forward (in-process)
   here: test_two_real_instances_started_at_once (two `voxtray` processes at once, then
     `voxtray status` and `voxtray quit`)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import soundfile  # type: ignore[import-untyped, unused-ignore]

from tests.support.audio import CLIP, SPEECH_DIR, read_wav
from tests.support.dictation_rig import MakeRig
from tests.support.homes import (
    CPU_INT8,
    ENCODER,
    REPAIR_HINTS,
    STT,
    TOKENS,
    damaged_home,
    home_env,
    linked_home,
    snapshot,
)
from tests.support.process import one_error_line, run_voxtray
from tests.support.qt_app import built_app, dispose_app
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard, heard
from tests.support.sounddevice import FakePortAudioError, FakeSoundDevice
from tests.support.store import WEIGHTS, Setup
from tests.support.x11 import grabbed_by_another_client
from voxtray.audio.decode import load_audio
from voxtray.audio.inputs import MicrophoneError
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.errors import ExitCode
from voxtray.models.catalog import catalog_path
from voxtray.models.store import ModelStore

# --- 1-3: broken models ---------------------------------------------------------------------


def _run_damaged(
    tmp_path: Path, store: ModelStore, rel: str, data: bytes | None, engine: str
) -> subprocess.CompletedProcess[str]:
    home = damaged_home(tmp_path, store, rel, data)
    before = snapshot(home)
    result = run_voxtray("transcribe", str(CLIP), "--engine", engine, *CPU_INT8, env=home_env(home))
    assert result.stdout == ""  # no half transcript
    assert snapshot(home) == before, "the failed run changed the store"
    return result


def _truncated_encoder(store: ModelStore) -> bytes:
    data = store.path(STT).joinpath(ENCODER).read_bytes()
    return data[: len(data) // 2]


@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_truncated_encoder_is_corrupt_exit_4(
    tmp_path: Path, installed: ModelStore, engine: str
) -> None:
    """An installed model damaged on disk: one line, exit 4 (CORRUPT), never a traceback."""
    result = _run_damaged(tmp_path, installed, ENCODER, _truncated_encoder(installed), engine)
    assert result.returncode == ExitCode.CORRUPT, result.stderr
    assert ENCODER in one_error_line(result)


@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_corrupt_model_error_names_the_repair(
    tmp_path: Path, installed: ModelStore, engine: str
) -> None:
    """The error tells the user how to repair the model, as `models verify` does."""
    result = _run_damaged(tmp_path, installed, ENCODER, _truncated_encoder(installed), engine)
    line = one_error_line(result)
    assert any(hint in line for hint in REPAIR_HINTS), line


@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_missing_tokens_file_is_corrupt_exit_4(
    tmp_path: Path, installed: ModelStore, engine: str
) -> None:
    """A deleted tokens file: one line naming it, exit 4 (CORRUPT)."""
    result = _run_damaged(tmp_path, installed, TOKENS, None, engine)
    assert result.returncode == ExitCode.CORRUPT, result.stderr
    assert TOKENS in one_error_line(result)


def test_ort_engine_refuses_a_model_of_another_family(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: ModelStore
) -> None:
    """`--engine ort` on a NeMo CTC model: exit 2 (USAGE) pointing at `--engine sherpa`,
    before any file of it is read and without touching the store."""
    monkeypatch.delenv("VOXTRAY_CATALOG", raising=False)
    catalog = json.loads(catalog_path().read_text(encoding="utf-8"))
    catalog["models"].append(
        {
            "name": "fake-ctc",
            "family": "nemo-ctc",
            "languages": ["en"],
            "size_mb": 0.1,
            "variants": {"int8": {"model": "model.int8.onnx", "tokens": "tokens.txt"}},
            "license": "MIT",
            "source": {"type": "url", "url": "https://example.invalid/fake-ctc.tar.bz2"},
            "files": [{"path": "model.int8.onnx"}, {"path": "tokens.txt"}],
        }
    )
    custom = tmp_path / "catalog.json"
    custom.write_text(json.dumps(catalog), encoding="utf-8")
    home = tmp_path / "home"
    fake = home / "models" / "fake-ctc"
    fake.mkdir(parents=True)
    (home / "models" / "silero-vad-v6").symlink_to(installed.path("silero-vad-v6"))
    (fake / "model.int8.onnx").write_bytes(b"not read")
    (fake / "tokens.txt").write_text("<blk> 0\n", encoding="utf-8")
    manifest = {
        "name": "fake-ctc",
        "family": "nemo-ctc",
        "variants": catalog["models"][-1]["variants"],
        "files": {},
    }
    (fake / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    before = snapshot(home)
    env = {**home_env(home), "VOXTRAY_CATALOG": str(custom)}
    result = run_voxtray("transcribe", str(CLIP), "--model", "fake-ctc", "--engine", "ort", env=env)
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_error_line(result)
    assert "fake-ctc is nemo-ctc" in line
    assert "--engine sherpa" in line
    assert result.stdout == ""
    assert snapshot(home) == before


# --- 4: settings ----------------------------------------------------------------------------


def test_corrupt_settings_warning_reaches_the_tray(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: ModelStore
) -> None:
    """The app shows the one-line warning of a corrupt settings file, naming the .bak."""
    from voxtray.ui.tray import Tray

    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(Tray, "notify", lambda self, title, text: shown.append((title, text)))
    settings_path = tmp_path / "settings.json"
    settings_path.write_bytes(b'{"engine": "warp-drive", "threads": ')
    app = built_app(installed, tmp_path)
    try:
        with qtbot.waitSignal(app.worker.loaded, timeout=120_000):
            pass
        assert app.settings == Settings()
        backup = tmp_path / "settings.json.bak"
        assert backup.read_bytes() == b'{"engine": "warp-drive", "threads": '
        [text] = [text for title, text in shown if "settings" in title.lower()]
        assert "\n" not in text
        assert str(backup) in text
        assert "using defaults" in text
    finally:
        dispose_app(app)


# --- 5-6: input files -----------------------------------------------------------------------


def test_unreadable_and_directory_inputs_are_exit_7(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    installed: ModelStore,
) -> None:
    """The CLI on a file it may not read and on a folder: one error line each, exit 7
    (BAD_INPUT), nothing on stdout. In-process, so root can be refused the read too."""
    from voxtray.cli import main as cli

    secret = tmp_path / "secret.wav"
    secret.write_bytes(CLIP.read_bytes())
    real_open = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == secret:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    monkeypatch.setenv("VOXTRAY_HOME", str(linked_home(tmp_path, installed)))
    monkeypatch.delenv("VOXTRAY_CATALOG", raising=False)
    code = cli.main(["transcribe", str(secret), str(tmp_path), *CPU_INT8])
    out, err = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT
    assert out == ""
    assert err.splitlines() == [
        f"voxtray: error: {secret}: permission denied",
        f"voxtray: error: {tmp_path}: is a directory",
    ]


def test_a_tenth_of_a_second_is_empty_text_and_exit_0(
    tmp_path: Path, installed: ModelStore
) -> None:
    """100 ms of the start of a word is too short to say anything: empty text, exit 0."""
    path = tmp_path / "blip.wav"
    soundfile.write(path, read_wav(CLIP)[:1600], 16000, subtype="PCM_16")
    result = run_voxtray(
        "transcribe", str(path), "--json", env=home_env(linked_home(tmp_path, installed))
    )
    assert result.returncode == ExitCode.OK, result.stderr
    record = json.loads(result.stdout)
    assert record["duration_s"] == pytest.approx(0.1)
    assert record["text"] == ""
    assert record["segments"] == []


LONG_PLAYLIST = [
    "jfk_inaugural",
    "harvard_sb_example1",
    "ls_1089-134686-0000",
    "osr_us_000_0034_8k",  # 35.5 s of continuous reading: must be cut below 25 s
    "ls_1272-128104-0004_8k",  # 29.4 s
]


@pytest.mark.slow
def test_ten_minute_flac_is_segmented_under_25_s(tmp_path: Path, installed: ModelStore) -> None:
    """Ten minutes of real speech and silences in one FLAC: every segment at most 25 s,
    nothing dropped (each complete Harvard sentence comes out), faster than real time."""
    rate, limit = 16000, 600 * 16000
    clips = {name: load_audio(SPEECH_DIR / "wav" / f"{name}.wav") for name in LONG_PLAYLIST}
    gap = np.zeros(2 * rate, np.float32)
    parts: list[np.ndarray] = []
    length = harvards = 0
    while length < limit:
        for name in LONG_PLAYLIST:
            if name == "harvard_sb_example1" and length + clips[name].size <= limit:
                harvards += 1
            parts += [clips[name], gap]
            length += clips[name].size + gap.size
    path = tmp_path / "ten-minutes.flac"
    soundfile.write(path, np.concatenate(parts)[:limit], rate, format="FLAC", subtype="PCM_16")
    assert path.stat().st_size < 20 * 2**20
    env = home_env(linked_home(tmp_path, installed))
    started = time.perf_counter()
    result = run_voxtray("transcribe", str(path), "--json", *CPU_INT8, env=env, timeout=900)
    elapsed = time.perf_counter() - started
    assert result.returncode == ExitCode.OK, result.stderr
    record = json.loads(result.stdout)
    assert record["duration_s"] == 600.0
    spans = [s["end_s"] - s["start_s"] for s in record["segments"]]
    assert len(spans) >= 6 * len(LONG_PLAYLIST)
    assert max(spans) <= 25.0
    # Silence on both sides makes each Harvard sentence a segment of its own.
    assert sum(heard(BIRCH, s["text"], SENTENCE_WER) for s in record["segments"]) == harvards
    print(f"\n10 minutes transcribed in {elapsed:.0f} s (real-time factor {elapsed / 600:.2f})")


# --- 7: the microphone -------------------------------------------------------------------


def test_missing_microphone_fails_load_with_one_line_error_exit_3(
    dictation_rig: MakeRig,
) -> None:
    """No input device: load() raises a one-line MicrophoneError (exit 3, NOT_FOUND), the
    state says why, and nothing half-loaded can start listening."""
    rig = dictation_rig(fake=FakeSoundDevice(np.zeros(16000, np.float32)))
    dictation, fake = rig.dictation, rig.fake
    fake.default_input = -1
    with pytest.raises(MicrophoneError) as error:
        dictation.load(Settings())
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("cannot open the default microphone")
    assert error.value.exit_code == ExitCode.NOT_FOUND
    status = dictation.status()
    assert (status["state"], status["detail"]) == ("error", message)
    assert dictation.start() is False
    assert fake.streams == []


def test_microphone_vanishing_mid_dictation_keeps_the_words(dictation_rig: MakeRig) -> None:
    """Unplugged half a second after the last word: one warning, the words still come
    out, are typed and kept in history; the state says the microphone is lost until the
    device works again, then it is ready and start() records from the reopened device."""
    warnings: list[str] = []
    done = threading.Event()
    rig = dictation_rig(
        callbacks=Callbacks(warning=warnings.append, utterance=lambda utterance: done.set()),
        settings=Settings(),
    )
    dictation, fake, output = rig.dictation, rig.fake, rig.output
    assert dictation.start()
    end = rig.speak()
    fake.fail, fake.fail_at = "finish", end + 8000
    fake.open_error = FakePortAudioError("Device unavailable")
    assert done.wait(60), "the lost microphone never ended the dictation"
    deadline = time.monotonic() + 10
    while dictation.state is not DictationState.ERROR:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert "was lost" in dictation.status()["detail"]
    assert dictation.start() is False
    [warning] = warnings
    assert "\n" not in warning
    assert "was lost" in warning
    last = dictation.last
    assert last is not None
    assert_heard(BIRCH, last.text, SENTENCE_WER)
    assert last.delivered
    assert output.typed == [last.text + " "]
    entry = dictation.history.get(last.history_id)
    assert entry is not None
    assert entry.text == last.text
    fake.fail, fake.open_error = None, None
    while dictation.state is not DictationState.READY:
        assert time.monotonic() < deadline + 10, dictation.status()
        time.sleep(0.01)
    assert dictation.start()
    assert len(fake.streams) == 2  # reopened
    dictation.stop()


# --- 8: the hotkey --------------------------------------------------------------------------


def test_hotkey_grabbed_by_another_program_is_reported(x_display: str) -> None:
    """Another X client holds ctrl+alt+h: the app must say so in one line when it starts
    listening (pynput's passive tap would fire for both programs)."""

    from voxtray.hotkeys import PynputBackend
    from voxtray.ui.control_bridge import ControlBridge

    usable, why = PynputBackend().available()
    if not usable:
        pytest.skip(f"pynput cannot listen on Xvfb here: {why}")

    notes: list[str] = []
    worker = SimpleNamespace(stop_requested=SimpleNamespace(emit=lambda: None), start=lambda: True)
    bridge = ControlBridge(worker, lambda title, text: notes.append(text))  # type: ignore[arg-type]
    with grabbed_by_another_client(x_display, "h"):
        try:
            bridge.start_hotkeys(Settings(hotkey="ctrl+alt+h", hotkey_backend="pynput"))
            assert bridge.hotkeys is not None, notes
            assert any("already grabbed" in note and "\n" not in note for note in notes), notes
        finally:
            bridge.stop_hotkeys()


# --- 9: downloads -----------------------------------------------------------------------------


def test_cut_download_is_exit_5_then_resumes(setup: Setup, tmp_path: Path) -> None:
    """`voxtray models install` cut off after 1000 bytes: exit 5 (NETWORK) in one line, the
    partial download kept and nothing installed; the next run resumes from byte 1000."""
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}
    models = tmp_path / "home" / "models"
    setup.server.cut_after = 1000
    cut = run_voxtray("models", "install", "demo-url", env=env, timeout=120)
    assert cut.returncode == ExitCode.NETWORK, cut.stderr
    assert "run again to resume" in one_error_line(cut)
    assert (models / ".downloads" / "demo-url.tar.gz.part").stat().st_size == 1000
    assert not (models / "demo-url").exists()
    assert not list((models / ".staging").iterdir())

    resumed = run_voxtray("models", "install", "demo-url", "--json", env=env, timeout=120)
    assert resumed.returncode == ExitCode.OK, resumed.stderr
    ranges = [r.range for r in setup.server.requests if r.path.endswith(".tar.gz")]
    assert ranges == [None, "bytes=1000-"]
    assert (models / "demo-url" / "model.onnx").read_bytes() == WEIGHTS
    assert not list((models / ".downloads").iterdir())


# --- 11: two instances ----------------------------------------------------------------------


def _wait_exit(process: subprocess.Popen[bytes], seconds: float) -> int | None:
    try:
        return process.wait(seconds)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.timeout(300)
def test_two_real_instances_started_at_once(tmp_path: Path, installed: ModelStore) -> None:
    """Two `voxtray` processes at once: exactly one keeps running, the other brings it
    forward (its `show` must be answered) and exits 0; `voxtray quit` then ends the first
    and removes its socket."""
    home = linked_home(tmp_path, installed)
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    env = home_env(home, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=str(runtime))
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(name, None)
    logs = [tmp_path / f"instance-{n}.log" for n in (0, 1)]
    processes = []
    try:
        for log in logs:
            with log.open("wb") as sink:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "voxtray"], env=env, stdout=sink, stderr=sink
                    )
                )
        deadline = time.monotonic() + 180
        while all(p.poll() is None for p in processes):
            assert time.monotonic() < deadline, "neither instance gave way"
            time.sleep(0.1)
        [loser] = [p for p in processes if p.poll() is not None]
        [winner] = [p for p in processes if p is not loser]
        loser_log = logs[processes.index(loser)].read_text(errors="replace")
        assert loser.returncode == 0, loser_log
        assert "Traceback" not in loser_log
        assert _wait_exit(winner, 2) is None, "the first instance did not keep running"

        status = run_voxtray("status", "--json", env=env, timeout=60)
        assert status.returncode == ExitCode.OK, status.stderr
        assert json.loads(status.stdout)["ok"] is True
        winner_log = logs[processes.index(winner)]
        # The lock's placeholder answers `status` while the app is still being built; the
        # line comes once it is up.
        running = f"running (pid {winner.pid})"
        deadline = time.monotonic() + 120
        while running not in winner_log.read_text(errors="replace"):
            assert time.monotonic() < deadline, winner_log.read_text(errors="replace")
            assert winner.poll() is None, winner_log.read_text(errors="replace")
            time.sleep(0.2)

        quit_ = run_voxtray("quit", env=env, timeout=60)
        assert quit_.returncode == ExitCode.OK, quit_.stderr
        assert _wait_exit(winner, 60) == 0, winner_log.read_text(errors="replace")
        assert not (home / "run" / "control.sock").exists()
        after = run_voxtray("status", env=env, timeout=60)
        assert after.returncode == ExitCode.NOT_RUNNING
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)
