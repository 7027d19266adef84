"""The set-up window: opened by itself on the first start, and from the tray's Set up…;
finishing or closing it sets `first_run_done`, so it is not shown again unless asked for.

Its steps, each skippable: the hotkey (with the conflict check, and on Wayland the exact
line to bind it in the compositor, with Copy); a microphone check (a live level, a 3 s test
recording played back and its transcript through the loaded model); the model step (the
"recommended here" measurement); the GPU self-test, where an NVIDIA driver is present; and a
box to try a real dictation in. On GNOME and KDE Wayland a typing step follows the hotkey:
the desktop's one-time question for its keyboard, and how the hotkey works there
(`voxtray.ui.setup_desktop`). While the app installs its first model, the install's
progress shows at the bottom."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from voxtray.config import Key, Settings, refusal
from voxtray.desktop.bindings import binding_line
from voxtray.desktop.session import DesktopSession
from voxtray.errors import first_line
from voxtray.gpu.providers import nvidia_driver_present
from voxtray.hotkeys.conflicts import check_conflicts
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.inference.engines import EngineChoice
from voxtray.models.measurements import Measured, MeasurementCache, default_cache
from voxtray.models.progress import InstallProgress
from voxtray.models.recommend import recommend
from voxtray.models.store import ModelStore
from voxtray.ui.background import Job, run_in_background
from voxtray.ui.download_window import DownloadProgress
from voxtray.ui.labels import selectable_text
from voxtray.ui.model_manager import measure_models, sentence, summary_text
from voxtray.ui.plain_words import plain
from voxtray.ui.settings.hotkey_edit import HotkeyEdit
from voxtray.ui.setup_desktop import DesktopStep, PortalTyping, needs_step, shortcut_problem

if TYPE_CHECKING:
    from voxtray.ui.worker import InferenceWorker

TEST_SECONDS = 3.0
MicTest = Callable[[float], tuple[NDArray[np.float32], str]]
"""Records that many seconds and returns the samples and their transcript."""
LevelSource = Callable[[], float | None]
Play = Callable[[NDArray[np.float32]], object]


def _ignore(_result: object) -> None:
    """For a call whose end nobody waits for (a recording played back, say)."""


def _named(widget: QWidget, name: str) -> QWidget:
    widget.setAccessibleName(name)
    return widget


def _page(intro: str) -> tuple[QWidget, QVBoxLayout]:
    """A step's page, its words at the top; the caller adds the controls below."""
    page = QWidget()
    box = QVBoxLayout(page)
    box.addWidget(selectable_text(intro))
    return page, box


class FirstRunWindow(QWidget):
    done = Signal(object)  # the Settings to save: the hotkey chosen, first_run_done set
    models_requested = Signal()
    selftest_requested = Signal()

    def __init__(
        self,
        settings: Settings,
        store: ModelStore,
        *,
        session: DesktopSession | None = None,
        level_source: LevelSource | None = None,
        mic_test: MicTest | None = None,
        play: Play | None = None,
        cache: MeasurementCache | None = None,
        gpu_present: bool | None = None,
        typing: PortalTyping | None = None,
        shortcut: Callable[[], str | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up Voxtray")
        self.settings, self.store = settings, store
        self.session = session or DesktopSession.from_env()
        self.level_source = level_source or (lambda: None)
        self.mic_test, self.play = mic_test, play
        self.cache = cache or default_cache()
        self.choice = EngineChoice.of(settings)
        self._jobs: list[Job] = []
        self._finished = False
        pages: dict[str, QWidget] = {"Hotkey": self._hotkey_page()}
        self.desktop_step: DesktopStep | None = None
        if needs_step(self.session):
            self.desktop_step = DesktopStep(
                typing or PortalTyping(), shortcut or (lambda: shortcut_problem(os.environ))
            )
            pages["Typing"] = self.desktop_step
        pages["Microphone"] = self._mic_page()
        pages["Model"] = self._model_page()
        if nvidia_driver_present() if gpu_present is None else gpu_present:
            pages["GPU"] = self._gpu_page()
        pages["Try it"] = self._try_page()
        self.steps = tuple(pages)
        self.stack = QStackedWidget()
        for page in pages.values():
            self.stack.addWidget(page)
        self.download = DownloadProgress()
        self.download.setVisible(False)
        self.step_label = QLabel()
        self.back = QPushButton("&Back")
        self.skip = QPushButton("&Skip this step")
        self.next = QPushButton("&Next")
        for button, name in ((self.back, "Back"), (self.skip, "Skip this step")):
            button.setAccessibleName(name)
        self.back.clicked.connect(lambda: self.go(self.stack.currentIndex() - 1))
        self.skip.clicked.connect(lambda: self.go(self.stack.currentIndex() + 1))
        self.next.clicked.connect(self._next)
        buttons = QHBoxLayout()
        buttons.addWidget(self.step_label, 1)
        for button in (self.back, self.skip, self.next):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.download)
        layout.addLayout(buttons)
        self.level_timer = QTimer(self)
        self.level_timer.timeout.connect(self._show_level)
        self.level_timer.start(100)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.close)  # skips the rest
        self.resize(620, 380)
        self.go(0)

    # --- steps ---------------------------------------------------------------------------

    def _hotkey_page(self) -> QWidget:
        page, box = _page(
            "Hold the hotkey while you speak, and let go: the text is typed where your "
            "cursor is. A short tap starts dictation and the next tap stops it."
        )
        self.hotkey = HotkeyEdit(self.settings.hotkey)
        self.hotkey.setAccessibleName("Hotkey")
        capture = QPushButton("&Capture")
        capture.setAccessibleName("Capture the hotkey")
        capture.clicked.connect(self.hotkey.start_capture)
        label = QLabel("&Hotkey:")
        label.setBuddy(self.hotkey)
        row = QHBoxLayout()
        row.addWidget(label)
        row.addWidget(self.hotkey, 1)
        row.addWidget(capture)
        box.addLayout(row)
        self.conflict = selectable_text("")
        self.conflict.setAccessibleName("Hotkey check")
        box.addWidget(self.conflict)
        self.binding = selectable_text("")
        self.binding.setAccessibleName("Binding line")
        self.copy = QPushButton("C&opy the line")
        self.copy.setAccessibleName("Copy the binding line")
        self.copy.clicked.connect(self._copy_binding)
        self.binding_intro = selectable_text(
            "On Wayland, Voxtray cannot grab a key itself: add this line to your "
            f"{self.session.desktop.value} configuration."
        )
        for widget in (self.binding_intro, self.binding, self.copy):
            box.addWidget(widget)
            widget.setVisible(self.session.wayland)
        box.addStretch(1)
        self.hotkey.textChanged.connect(self._check_hotkey)
        self._check_hotkey()
        return page

    def _mic_page(self) -> QWidget:
        page, box = _page("Speak: the bar should move. Then record a short test.")
        self.level = QProgressBar()
        self.level.setRange(-60, 0)
        self.level.setFormat("%v dBFS")
        self.level.setAccessibleName("Microphone level")
        box.addWidget(self.level)
        self.record = QPushButton(f"&Record a {TEST_SECONDS:.0f} s test")
        self.record.setAccessibleName("Record a test")
        self.record.setEnabled(self.mic_test is not None)
        self.record.clicked.connect(self.record_test)
        box.addWidget(self.record)
        self.transcript = selectable_text("")
        self.transcript.setAccessibleName("Test transcript")
        box.addWidget(self.transcript)
        box.addStretch(1)
        return page

    def _model_page(self) -> QWidget:
        page, box = _page(
            f"Voxtray can time the installed models on this machine and recommend the "
            f"most accurate one that gives text within {self.settings.recommend_budget_ms}"
            " ms of release for 5 s of speech (the budget is in Settings, Model)."
        )
        self.measure = QPushButton("&Measure on this machine")
        self.measure.setAccessibleName("Measure on this machine")
        self.measure.clicked.connect(self.measure_models)
        manager = QPushButton("Open the model m&anager…")
        manager.setAccessibleName("Open the model manager")
        manager.clicked.connect(self.models_requested.emit)
        self.recommendation = selectable_text("")
        self.recommendation.setAccessibleName("Recommendation")
        for widget in (self.measure, manager, self.recommendation):
            box.addWidget(widget)
        box.addStretch(1)
        return page

    def _gpu_page(self) -> QWidget:
        page, box = _page(
            "This computer has an NVIDIA graphics card. The self-test runs the model on it "
            "and shows whether it really ran there, how fast, and, if Voxtray fell back "
            "to the processor, why and how to fix it."
        )
        run = QPushButton("Run the GPU self-&test…")  # Alt+S is Skip this step
        run.setAccessibleName("Run the GPU self-test")
        run.clicked.connect(self.selftest_requested.emit)
        box.addWidget(run)
        box.addStretch(1)
        return page

    def _try_page(self) -> QWidget:
        page = QWidget()
        box = QVBoxLayout(page)
        self.try_intro = selectable_text("")
        box.addWidget(self.try_intro)
        self.try_box = QPlainTextEdit()
        self.try_box.setAccessibleName("Try it now")
        self.try_box.setTabChangesFocus(True)
        self.try_intro.setBuddy(self.try_box)  # read out with the box, as its label
        box.addWidget(self.try_box, 1)
        return page

    # --- navigation ----------------------------------------------------------------------

    def go(self, index: int) -> None:
        if index >= self.stack.count():
            self.finish()
            return
        index = max(index, 0)
        self.stack.setCurrentIndex(index)
        self.step_label.setText(f"Step {index + 1} of {len(self.steps)}: {self.steps[index]}")
        self.back.setEnabled(index > 0)
        last = index == self.stack.count() - 1
        self.next.setText("&Finish" if last else "&Next")
        self.next.setAccessibleName("Finish" if last else "Next")
        self.skip.setVisible(not last)
        if last:
            self.try_intro.setText(
                f"Click in the box, hold {self.chosen_hotkey()} and say a sentence; let go "
                "and the text appears here."
            )
            self.try_box.setFocus()

    def _next(self) -> None:
        self.go(self.stack.currentIndex() + 1)

    def chosen_hotkey(self) -> str:
        """The hotkey typed, in its canonical spelling; the saved one when it is not valid."""
        try:
            return str(parse_hotkey(self.hotkey.text()))
        except ValueError:
            return self.settings.hotkey

    def finish(self) -> None:
        self._finished = True
        self.done.emit(self.settings.replace(hotkey=self.chosen_hotkey(), first_run_done=True))
        self.close()

    def show_install(self, progress: InstallProgress) -> None:
        """The app's model install, shown below the steps until `install_over`."""
        self.download.setVisible(True)
        self.download.show_progress(progress)

    def install_over(self) -> None:
        self.download.setVisible(False)

    # --- hotkey --------------------------------------------------------------------------

    def _check_hotkey(self) -> None:
        # A hotkey the setting refuses is said in its words, as the settings window and a
        # hand-edited file say it.
        if (refused := refusal(Key.HOTKEY, self.hotkey.text())) is not None:
            self.conflict.setText(refused)
            return
        hotkey = parse_hotkey(self.hotkey.text())
        warning = check_conflicts(hotkey)
        self.conflict.setText(warning or f"{hotkey} looks free.")
        self.binding.setText(binding_line(self.session.desktop, hotkey))

    def _copy_binding(self) -> None:
        clipboard = QGuiApplication.clipboard()
        clipboard.setText(self.binding.text())
        self.copy.setText("C&opied")

    # --- microphone ----------------------------------------------------------------------

    def _show_level(self) -> None:
        level = self.level_source()
        self.level.setValue(int(max(-60.0, min(0.0, level))) if level is not None else -60)

    def record_test(self) -> None:
        test = self.mic_test
        if test is None or not self.record.isEnabled():
            return
        self.record.setEnabled(False)
        self.transcript.setText(f"Recording for {TEST_SECONDS:.0f} s: speak now…")
        self._jobs.append(run_in_background(lambda: test(TEST_SECONDS), self._recorded))

    def _recorded(self, result: tuple[NDArray[np.float32], str] | Exception) -> None:
        self.record.setEnabled(True)
        if isinstance(result, Exception):
            self.transcript.setText(f"The test failed: {plain(str(result))}")
            return
        samples, text = result
        self.transcript.setText(f"Heard: {text}" if text.strip() else "Heard no words.")
        if self.play is not None:
            self.play(samples)

    # --- model ---------------------------------------------------------------------------

    def measure_models(self) -> None:
        names = [m.name for m in self.store.installed() if m.manifest["family"] != "silero-vad"]
        self.measure.setEnabled(False)
        self.recommendation.setText("Measuring…")
        measure = measure_models(self.store, names, self.choice, self.cache)
        self._jobs.append(run_in_background(measure, self._measured, "voxtray-measure"))

    def _measured(self, measured: Measured | Exception) -> None:
        self.measure.setEnabled(True)
        if isinstance(measured, Exception):
            self.recommendation.setText(f"Could not measure: {plain(first_line(measured))}")
            return
        installed = {m.name for m in self.store.installed()}
        budget = self.settings.recommend_budget_ms
        result = recommend(measured.results, budget, self.store.catalog, installed)
        notes = [sentence(note) for note in measured.notes]
        self.recommendation.setText(" ".join([summary_text(result), *notes]))

    @property
    def busy(self) -> bool:
        return any(job.running for job in self._jobs)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.level_timer.stop()
        step_jobs = self.desktop_step.jobs if self.desktop_step is not None else []
        for job in (*self._jobs, *step_jobs):
            job.wait(60)
        if self.desktop_step is not None:
            self.desktop_step.typing.close()
        if not self._finished:  # closed: skipped as a whole, and not shown again either
            self._finished = True
            self.done.emit(self.settings.replace(first_run_done=True))
        super().closeEvent(event)


def setup_window(
    settings: Settings,
    store: ModelStore,
    worker: InferenceWorker,
    on_done: Callable[[Settings], None],
    open_models: Callable[[], None],
    open_selftest: Callable[[], None],
) -> FirstRunWindow:
    """The window for the running app: its microphone, its loaded model, its settings."""
    from voxtray.audio.playback import play_recording

    def play(samples: NDArray[np.float32]) -> None:
        run_in_background(lambda: play_recording(samples), _ignore, "voxtray-play")

    window = FirstRunWindow(
        settings,
        store,
        level_source=worker.current_level,
        mic_test=worker.test_recording,
        play=play,
        typing=PortalTyping(in_use=worker.output),
    )
    window.done.connect(on_done)
    window.models_requested.connect(open_models)
    window.selftest_requested.connect(open_selftest)
    return window
