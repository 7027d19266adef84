"""Speech-to-text engines behind the one `Recognizer` protocol (`base`): Voxtray's own
Whisper on onnxruntime, sherpa-onnx, and the remote OpenAI-compatible and Wyoming clients."""
