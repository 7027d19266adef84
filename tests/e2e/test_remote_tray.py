"""Engine remote in the tray app: the settings dialog (the API key kept out of
settings.json, in a 0600 file or the keyring), and whole dictations through the Qt-free
core against a real `voxtray serve` process and against a closed port (local fallback)."""

from __future__ import annotations

import json
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.dictation_rig import MakeRig
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.remote import API_KEY, MemoryKeyring, dictate, remote_settings
from tests.support.serving import Served, serving_tiny_en
from voxtray.choices import DictationState, Engine, RemoteProtocol
from voxtray.config import Settings, SettingsError, SettingsStore
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Section


def test_remote_settings_are_checked() -> None:
    settings = Settings(
        engine=Engine.REMOTE, remote_url="tcp://box:10300", remote_protocol=RemoteProtocol.WYOMING
    )
    assert settings.remote_protocol is RemoteProtocol.WYOMING
    assert settings.remote_problem() is None
    assert Settings(engine=Engine.REMOTE).remote_problem() == "engine remote needs a server URL"
    mismatch = Settings(engine=Engine.REMOTE, remote_url="tcp://box:10300")
    assert "goes with protocol wyoming" in str(mismatch.remote_problem())
    with pytest.raises(SettingsError, match="remote_url must be"):
        Settings(remote_url="ftp://box")
    with pytest.raises(SettingsError, match="remote_timeout_s must be a number from 1 to 600"):
        Settings(remote_timeout_s=0.5)


def test_dialog_shows_remote_fields_and_keeps_the_key_out_of_settings(
    qtbot: Any, tmp_path: Path
) -> None:
    from voxtray.settings_writer import SettingsWriter
    from voxtray.ui.settings.window import SettingsWindow

    keys = ApiKeyStore(tmp_path / "data" / "remote-api-key", keyring=None)
    store = SettingsStore(tmp_path / "settings.json")
    dialog = SettingsWindow(
        Settings(),
        ModelStore(tmp_path / "models", load_catalog()),
        SettingsWriter(store),
        api_keys=keys,
    )
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_section(Section.REMOTE)
    assert Engine.REMOTE.value in [dialog.engine.itemText(i) for i in range(dialog.engine.count())]
    assert not dialog.remote_page.use_server.isChecked()
    dialog.engine.setCurrentText(Engine.REMOTE)
    assert dialog.remote_page.use_server.isChecked()
    assert dialog.remote_box.isVisible()
    for field in (
        dialog.remote_url,
        dialog.remote_protocol,
        dialog.remote_key,
        dialog.remote_model,
        dialog.remote_timeout,
    ):
        assert field.isVisible()
    qtbot.keyClicks(dialog.remote_url, "tcp://gpu-box:10300")
    assert dialog.remote_protocol.currentText() == RemoteProtocol.WYOMING
    dialog.remote_url.clear()
    qtbot.keyClicks(dialog.remote_url, "http://gpu-box:8000")
    assert dialog.remote_protocol.currentText() == RemoteProtocol.OPENAI
    dialog.remote_key.setText(API_KEY)
    dialog.remote_model.setText("whisper-1")
    dialog.remote_timeout.setValue(4.5)
    with qtbot.waitSignal(dialog.api_key_saved), qtbot.waitSignal(dialog.saved) as saved:
        dialog.save()
    settings = saved.args[0]
    assert settings.engine is Engine.REMOTE
    assert settings.remote_url == "http://gpu-box:8000"
    assert settings.remote_timeout_s == 4.5
    text = (tmp_path / "settings.json").read_text()
    assert API_KEY not in text
    assert json.loads(text)["remote_model"] == "whisper-1"
    assert keys.path.read_text().strip() == API_KEY
    assert stat.S_IMODE(keys.path.stat().st_mode) == 0o600
    assert store.load()[0] == settings

    again = SettingsWindow(settings, dialog.store, SettingsWriter(store), api_keys=keys)
    qtbot.addWidget(again)
    assert again.remote_key.text() == API_KEY
    assert again.remote_key.echoMode() == again.remote_key.EchoMode.Password
    again.remote_key.clear()
    again.save()
    assert not keys.path.exists()  # an emptied key is removed, not left on disk


def test_keyring_is_used_where_there_is_one(tmp_path: Path) -> None:
    path = tmp_path / "remote-api-key"
    path.write_text("old file copy\n")
    keyring = MemoryKeyring()
    keys = ApiKeyStore(path, keyring=keyring)
    keys.set(API_KEY)
    assert keys.get() == API_KEY
    assert list(keyring.saved.values()) == [API_KEY]
    assert not path.exists()
    assert keys.where == "the desktop keyring"
    keys.set("")
    assert keys.get() == ""


# --- dictations against a real server ---------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Served]:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    with serving_tiny_en(tmp_path_factory.mktemp("tray-remote"), model_store) as server:
        yield server


def test_dictation_through_voxtray_serve(
    tmp_path: Path, model_store: ModelStore, served: Served
) -> None:
    dictation, utterance, warnings, output = dictate(
        tmp_path, model_store, remote_settings(served.url), served.token
    )
    try:
        assert warnings == []
        assert dictation.loaded is not None
        assert dictation.loaded.provider == "remote:cpu"
        assert dictation.loaded.extra["device"]  # the server's CPU model
        assert utterance is not None
        assert_heard(BIRCH, utterance.text, SENTENCE_WER)
        assert output.typed == [utterance.text + " "]
        assert utterance.record.provider == "remote:cpu"
        assert utterance.record.engine == "remote"
        timings = utterance.timings_ms
        for stage in ("stt_remote", "stt_network", "stt_server_queue", "stt_server_inference"):
            assert stage in timings, timings
        assert timings["stt_remote"] >= timings["stt_server_inference"] > 0
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.provider == "remote:cpu"
        assert entry.delivered
    finally:
        dictation.close()


def test_wrong_key_falls_back_and_says_why(
    tmp_path: Path, model_store: ModelStore, served: Served
) -> None:
    dictation, utterance, warnings, output = dictate(
        tmp_path, model_store, remote_settings(served.url), "vx-wrong"
    )
    try:
        assert len(warnings) == 1
        assert warnings[0].startswith("server failed, using the local model: ")
        assert "refused: 401" in warnings[0]
        assert utterance is not None
        assert utterance.record.provider == "cpu"
        assert_heard(BIRCH, utterance.text, SENTENCE_WER)
        assert output.typed == [utterance.text + " "]
    finally:
        dictation.close()


def test_closed_port_falls_back_and_the_text_is_delivered(
    tmp_path: Path, model_store: ModelStore
) -> None:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    dictation, utterance, warnings, output = dictate(
        tmp_path, model_store, remote_settings(f"http://127.0.0.1:{closed}", 2.0), API_KEY
    )
    try:
        assert dictation.state is DictationState.READY
        assert len(warnings) == 1, warnings
        assert warnings[0] == (
            f"server failed, using the local model: cannot reach "
            f"http://127.0.0.1:{closed}/v1/audio/transcriptions: Connection refused"
        )
        assert dictation.loaded is not None
        assert dictation.loaded.provider == "cpu"
        assert utterance is not None
        assert_heard(BIRCH, utterance.text, SENTENCE_WER)
        assert output.typed == [utterance.text + " "]
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.text == utterance.text
        assert entry.delivered
    finally:
        dictation.close()


class _Server:
    """A remote engine that fails while `down` is set."""

    engine = "remote"
    model = "served"
    provider = "remote:cpu"

    def __init__(self) -> None:
        self.down = True
        self.calls = 0

    def warmup(self) -> None:
        pass

    def transcribe(self, audio: object) -> Any:
        from voxtray.inference.recognizers.base import Transcript
        from voxtray.inference.recognizers.remote_openai import RemoteError

        self.calls += 1
        if self.down:
            raise RemoteError("cannot reach the server")
        return Transcript("remote words", [], {}, self.provider)


class _Local(_Server):
    engine = "ort"
    provider = "cpu"

    def transcribe(self, audio: object) -> Any:
        from voxtray.inference.recognizers.base import Transcript

        return Transcript("local words", [], {}, self.provider)


def test_the_server_is_tried_again_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    from voxtray.inference import remote as remote_module

    clock = [100.0]
    monkeypatch.setattr("voxtray.inference.remote.time.monotonic", lambda: clock[0])
    server = _Server()
    loads: list[int] = []
    heard: list[str] = []

    def local() -> Any:
        loads.append(1)
        return _Local()

    recognizer = remote_module.FallbackRecognizer(server, local, heard.append, retry_after_s=60)
    audio = np.zeros(1600, np.float32)
    assert recognizer.transcribe(audio).text == "local words"
    server.down = False
    clock[0] += 30
    assert recognizer.transcribe(audio).text == "local words"  # not yet
    assert server.calls == 1
    clock[0] += 31
    assert recognizer.transcribe(audio).text == "remote words"
    assert recognizer.provider == "remote:cpu"
    assert recognizer.fallback is None
    server.down = True
    assert recognizer.transcribe(audio).text == "local words"
    assert loads == [1]  # the local model is loaded once
    assert heard == ["cannot reach the server"] * 2


def test_remote_without_a_server_is_the_local_model_and_a_warning(
    tmp_path: Path, dictation_rig: MakeRig
) -> None:
    rig = dictation_rig(api_keys=ApiKeyStore(tmp_path / "key", keyring=None))
    loaded = rig.dictation.load(Settings(engine=Engine.REMOTE))
    assert rig.warnings == ["engine remote needs a server URL; using the local model"]
    assert (loaded.engine, loaded.provider) == ("ort", "cpu")
    assert rig.dictation.state is DictationState.READY
