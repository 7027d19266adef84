"""Loading for dictation: the model installed, loaded and warmed up into a pipeline, then
the microphone and the output opened beside it, as one `Loaded` bundle. No state here:
`Dictation.load` decides what each failure means for the dictation."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from voxtray.choices import Engine
from voxtray.config import Settings
from voxtray.dictation.io import DictationIO, Warn
from voxtray.dictation.loaded import Loaded, LoadedModel, live_options
from voxtray.errors import VoxtrayError
from voxtray.gpu.failures import GpuFailure
from voxtray.inference.assembly import build_pipeline, vad_options
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.gpu_fallback import GpuFallbackRecognizer
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.recognizers.base import device_of
from voxtray.models.progress import ProgressFn
from voxtray.models.store import ModelStore
from voxtray.output.base import TextOutput

Partial = Callable[[str, str], None]


@dataclass(frozen=True)
class Built:
    """A warmed-up pipeline, what it was built as, and when its load began."""

    pipeline: DictationPipeline
    choice: EngineChoice
    started: float


class Loader:
    """Builds a dictation's `Loaded` bundles.

    Args:
        store: The installed models (missing ones are installed).
        io: Opens the microphone, the output and the remote engine.
        warn: Shows the user one line.
        progress: Install and load progress.
        on_gpu_failure: Told, on the recognition thread, when the GPU fails.
        on_partial: Live text while listening (committed, tentative).
    """

    def __init__(
        self,
        store: ModelStore,
        io: DictationIO,
        *,
        warn: Warn,
        progress: ProgressFn,
        on_gpu_failure: Callable[[GpuFailure], None],
        on_partial: Partial,
    ) -> None:
        self._store, self._io = store, io
        self._warn, self._progress = warn, progress
        self._on_gpu_failure, self._on_partial = on_gpu_failure, on_partial

    def build(self, settings: Settings) -> Built:
        """Install (if needed), load and warm up the settings' model.

        Raises:
            VoxtrayError: It cannot be installed or loaded.
        """
        started = time.perf_counter()
        choice = EngineChoice.of(settings)
        remote = self._io.remote(settings, self._warn)
        if settings.engine == Engine.REMOTE:  # the local model (the fallback) runs as usual
            choice = dataclasses.replace(choice, engine=Engine.AUTO)
        pipeline = build_pipeline(
            self._store,
            choice,
            model_name=settings.model,
            vad=vad_options(settings),
            refresh_stale=True,
            progress=self._progress,
            remote=remote,
            on_gpu_failure=self._on_gpu_failure,
            create=self._io.recognizer_factory or create_recognizer,
        )
        return Built(pipeline, choice, started)

    def equip(
        self, settings: Settings, built: Built, output: TextOutput | None = None
    ) -> tuple[Loaded, VoxtrayError | None]:
        """The bundle: the pipeline set up for these settings, with the microphone (None,
        and why, when it cannot be opened) and ``output``, or a new one made for them.

        Raises:
            VoxtrayError: The output cannot be made (the microphone is closed again).
        """
        microphone, mic_error = None, None
        try:
            microphone = self._io.open_microphone(settings, self._warn)
        except VoxtrayError as exc:
            mic_error = exc
        try:
            if output is None:
                output = self._io.make_output(settings.output)
        except VoxtrayError:
            if microphone is not None:
                microphone.close()
            raise
        pipeline = built.pipeline
        options, as_you_go = live_options(settings)
        pipeline.set_live(options, self._on_partial)
        # A guess on a remote engine is a request to the server that cannot be taken back.
        pipeline.decode_ahead = settings.engine is not Engine.REMOTE
        pipeline.release_idle_memory()  # the warm-up's working memory, until the first use
        loaded = Loaded(
            settings=settings,
            pipeline=pipeline,
            output=output,
            model=_model_of(built),
            microphone=microphone,
            as_you_go=as_you_go,
        )
        for problem in loaded.modes.problems:  # the other modes still work
            self._warn(problem)
        recognizer = pipeline.recognizer
        if isinstance(recognizer, GpuFallbackRecognizer) and recognizer.failure:
            loaded = loaded.after_gpu_failure(recognizer.failure)
        return loaded, mic_error


def _model_of(built: Built) -> LoadedModel:
    recognizer = built.pipeline.recognizer
    return LoadedModel(
        model=recognizer.model,
        engine=recognizer.engine,
        provider=recognizer.provider,
        precision=built.choice.precision,
        load_s=time.perf_counter() - built.started,
        extra={"device": device_of(recognizer)},
    )
