"""What tests share: fakes that replay real audio, real desktops (X11, sway, PulseAudio),
server helpers, the model store, one `run_voxtray` and one `wait_for`. Modules with
fixtures are registered as plugins in tests/conftest.py."""
