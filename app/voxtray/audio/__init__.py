"""Audio in: files, the microphone and the features the recognisers read, all at one rate."""

SAMPLE_RATE = 16000  # Hz, mono: what the VAD and every recogniser expect
