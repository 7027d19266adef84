"""Microphone: which input, its level now, and how sure speech detection must be."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QProgressBar, QVBoxLayout, QWidget

from voxtray.config import Settings
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_row
from voxtray.ui.settings.page import Page
from voxtray.ui.settings.value_slider import ValueSlider

LevelSource = Callable[[], float | None]
"""Returns the current microphone's level in dBFS, or None while none is open."""


class InputDevice(Protocol):
    @property
    def name(self) -> str: ...


class MicrophonePage(Page):
    section = Section.MICROPHONE

    def __init__(
        self,
        settings: Settings,
        microphones: Sequence[InputDevice],
        level_source: LevelSource | None,
    ) -> None:
        super().__init__(settings)
        self.level_source = level_source
        column = QWidget()
        layout = QVBoxLayout(column)
        layout.setContentsMargins(0, 0, 0, 0)
        self.microphone = QComboBox()
        self.microphone.addItem("System default", None)
        for device in microphones:
            self.microphone.addItem(device.name, device.name)
        self.microphone.setCurrentIndex(max(self.microphone.findData(settings.microphone), 0))
        self.level = QProgressBar()
        self.level.setRange(-60, 0)
        self.level.setValue(-60)
        self.level.setFormat("level %v dB")
        self.level.setAccessibleName("Microphone level")
        self.level.setAccessibleDescription("the microphone's loudness now, -60 (silent) to 0 dB")
        layout.addWidget(self.microphone)
        layout.addWidget(self.level)
        add_row(self.form, Key.MICROPHONE.spec, column, self.microphone)
        self.bind(Key.MICROPHONE, self.microphone.currentData)
        self.vad_slider = ValueSlider(Key.VAD_THRESHOLD.spec, settings.vad_threshold)
        self.vad = self.vad_slider.slider
        add_row(self.form, Key.VAD_THRESHOLD.spec, self.vad_slider, self.vad)
        self.bind(Key.VAD_THRESHOLD, self.vad_slider.value)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.update_level)
        self._timer.start(100)

    def update_level(self) -> None:
        level = self.level_source() if self.level_source is not None else None
        if level is not None:
            self.level.setValue(max(-60, min(0, round(level))))
