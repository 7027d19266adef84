"""Soak run: many push-to-talk cycles through the real stack, headless and time-compressed.

Every cycle goes through the InferenceWorker on its QThread, as the tray drives it:
``worker.start()`` from the main thread, ``stop_requested`` queued to the worker, the
utterance signal queued back to the main thread. Underneath are the real Dictation,
Microphone (fed by ``FakeSoundDevice`` replaying real clips faster than real time),
Silero VAD, whisper-tiny.en int8 on the ort engine, a History in a temporary SQLite file
and an output that records what it was asked to type.

Speech cycles vary in length as dictation does: whole clips, two clips back to back and
random crops, so the recogniser sees hundreds of distinct input lengths (onnxruntime
grows its memory with each new one unless told not to).

Resources are sampled after every cycle; the run fails if RSS over the last cycles is more
than 5 % above RSS over the first dictations (window floors), if threads or file descriptors do
not come back to their warm-up counts, or if any utterance is missing from the history or
does not match its clip.

    python -m tools.soak --cycles 500
"""
