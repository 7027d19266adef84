"""What a dictation opens beside its model: the microphone, the text output, the remote
server and the stream its sound cues play on.

Tests hand `DictationIO` a stand-in for sounddevice, an output factory and a recogniser
factory (a real recogniser with injected faults), and the same code opens them as opens the
real ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.audio.backend import AudioBackend, PlaybackStream
from voxtray.audio.cues import sounddevice_stream
from voxtray.choices import Engine
from voxtray.config import Settings

if TYPE_CHECKING:
    from voxtray.audio.microphone import Microphone
    from voxtray.inference.assembly import RemoteWrapper
    from voxtray.inference.engines import RecognizerFactory
    from voxtray.inference.remote_key import ApiKeyStore
    from voxtray.output.base import TextOutput

REMOTE_RETRY_S = 60.0
"""After a remote failure the local model works alone this long, then the server is tried."""

Warn = Callable[[str], None]
OutputFactory = Callable[[str], "TextOutput"]
"""Makes the output a setting names (tests pass one that records what was typed)."""


@dataclass
class DictationIO:
    sd_module: AudioBackend | None = None
    output_factory: OutputFactory | None = None
    api_keys: ApiKeyStore | None = None
    recognizer_factory: RecognizerFactory | None = None

    def open_microphone(
        self, settings: Settings, warn: Warn, *, require_audio: bool = False
    ) -> Microphone:
        """The settings' microphone, open and (within 3 s) delivering audio; without
        audio by then, `require_audio` closes it with a MicrophoneError, otherwise `warn`."""
        from voxtray.audio.inputs import MicrophoneError
        from voxtray.audio.microphone import Microphone

        microphone = Microphone(
            settings.microphone,
            preroll_ms=settings.preroll_ms,
            tail_ms=settings.tail_ms,
            sd_module=self.sd_module,
        )
        microphone.open()
        # Through PulseAudio the first stream of a process can take over a second to
        # deliver; "ready" must mean the pre-roll is filling.
        if not microphone.wait_for_audio(timeout=3.0):
            name = settings.microphone or "default"
            if require_audio:
                microphone.close()
                raise MicrophoneError(f"microphone {name} delivers no audio")
            warn(f"microphone {name} delivers no audio yet")
        return microphone

    def reinitialise_portaudio(self) -> None:
        """A device plugged in, or a server restarted, is only seen by a fresh PortAudio."""
        from voxtray.audio.inputs import reinitialise_portaudio

        reinitialise_portaudio(self.sd_module)

    def make_output(self, preferred: str) -> TextOutput:
        if self.output_factory is not None:
            return self.output_factory(preferred)
        from voxtray.output.chooser import choose_output
        from voxtray.output.clipboard import recover_clipboard
        from voxtray.output.explain import prepare

        recover_clipboard()  # a paste killed mid-way borrowed the user's clipboard
        output = choose_output(preferred)
        prepare(output)  # the desktop's consent is asked at start, not at the first dictation
        return output

    def remote(self, settings: Settings, warn: Warn) -> RemoteWrapper | None:
        """With engine remote: the server's engine, the local model taking over (with a
        one-line warning) when the server is unreachable, too slow or refuses."""
        if settings.engine != Engine.REMOTE:
            return None
        if problem := settings.remote_problem():
            warn(f"{problem}; using the local model")
            return None
        from voxtray.inference.remote import fallback_wrapper, spec_from_settings
        from voxtray.inference.remote_key import ApiKeyStore

        keys = self.api_keys or ApiKeyStore()
        spec = spec_from_settings(settings, keys.get())

        def fell_back(reason: str) -> None:
            warn(f"server failed, using the local model: {reason}")

        return fallback_wrapper(spec, fell_back, retry_after_s=REMOTE_RETRY_S)

    def open_cue_stream(self, rate: int, device: str | int | None) -> PlaybackStream:
        if self.sd_module is None:
            return sounddevice_stream(rate, device)
        return self.sd_module.OutputStream(
            samplerate=rate, channels=1, dtype="float32", device=device
        )
