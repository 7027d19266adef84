#!/usr/bin/env bash
# Set up a development checkout of Voxtray, then run the app or the test suite.
#
#   packaging/dev.sh run [ARGS...]    system packages, .venv, default models, then `voxtray ARGS`
#   packaging/dev.sh test [PYTEST...] the same plus test tools, lint, then the whole test suite
#
# Missing Debian packages are installed when running as root; otherwise the exact
# `sudo apt-get install` line is printed and the script stops.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
[ $# -gt 0 ] && shift

PYTHON=${PYTHON:-python3}
# faster-whisper is the benchmark and accuracy peer; see pyproject's `peer` extra.
FASTER_WHISPER="faster-whisper==1.2.1"
FASTER_WHISPER_SERVER="faster-whisper-server==0.0.3"
WYOMING_FASTER_WHISPER="wyoming-faster-whisper==3.8.1"

# PortAudio for the microphone; Qt's xcb plugin needs the xcb libraries; pynput's evdev
# dependency builds from source (gcc, kernel headers); xdotool and xclip type and paste.
run_packages=(libportaudio2 libegl1 libgl1 libfontconfig1 libdbus-1-3 libxkbcommon-x11-0
  libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0
  libxcb-shape0 libxcb-xkb1 gcc linux-libc-dev python3-dev xdotool xclip)
# Real desktops for the end-to-end tests: X server, tray, virtual microphone; headless sway
# with waybar's tray, wtype, wl-clipboard, grim screenshots and Xwayland; headless mutter
# and kwin, where nothing types without ydotool; espeak-ng speaks dictated commands; nginx
# balances `voxtray serve` replicas; fakeroot, zstd, lintian and debootstrap build, check
# and install the Linux packages on a clean Debian root; the accessibility bus and the
# system Python's AT-SPI binding read the windows as a screen reader does; the desktop
# portals (GNOME's and KDE's backends, Qt's Wayland plugins for KDE's) lend the keyboard
# that types on GNOME and KDE Wayland, into Chromium, Firefox, foot and Konsole (KDE's terminal) as native clients;
# qemu-user runs int8 recognition on an emulated CPU without VNNI; g++ and cmake compile
# llama.cpp once for the clean-up tests; xterm is the terminal the X11 modes test types into.
test_packages=(xvfb xauth trayer x11-utils pulseaudio pulseaudio-utils libasound2-plugins
  sway wtype wl-clipboard waybar grim xwayland mutter kwin-wayland espeak-ng nginx
  fakeroot zstd lintian debootstrap dbus-daemon at-spi2-core python3-pyatspi gir1.2-atspi-2.0
  gir1.2-gtk-3.0 python3-gi zenity xdg-desktop-portal xdg-desktop-portal-gnome
  xdg-desktop-portal-kde qtwayland5 layer-shell-qt chromium firefox-esr foot konsole qemu-user
  g++ cmake xterm)

log() { printf 'dev.sh: %s\n' "$*" >&2; }

missing_packages() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

ensure_system_packages() {
  command -v dpkg-query >/dev/null || { log "not a Debian/Ubuntu system: install PortAudio yourself"; return; }
  local wanted=("$@")
  "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || wanted+=(python3-venv)
  mapfile -t missing < <(missing_packages "${wanted[@]}")
  [ ${#missing[@]} -eq 0 ] && return
  if [ "$(id -u)" -eq 0 ]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Voxtray needs these system packages first:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
}

check_python() {
  "$PYTHON" - <<'PY' || { log "Voxtray needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)"; exit 1; }
import sys
raise SystemExit(sys.version_info < (3, 11))
PY
}

ensure_venv() {
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e "$@"
  # The CPU `onnxruntime` package (pulled in by other tools) overwrites the GPU build's
  # files, since both install the same module: keep only the one pyproject chose.
  if .venv/bin/python -m pip show -q onnxruntime-gpu >/dev/null 2>&1 \
    && .venv/bin/python -m pip show -q onnxruntime >/dev/null 2>&1; then
    log "removing the CPU onnxruntime package that shadows onnxruntime-gpu"
    .venv/bin/python -m pip uninstall -q -y onnxruntime
    .venv/bin/python -m pip install -q --force-reinstall --no-deps onnxruntime-gpu
  fi
}

# Peer transcription servers that tests/serve/test_remote_peers.py talks to. They pull the CPU
# `onnxruntime`, so they live in their own venv, never in .venv.
ensure_peer_servers() {
  [ -x .venv-peers/bin/python ] || "$PYTHON" -m venv .venv-peers
  .venv-peers/bin/python -m pip install -q "$FASTER_WHISPER_SERVER" "$WYOMING_FASTER_WHISPER"
}

# llama.cpp's OpenAI-compatible server (llama-cpp-python's) for the clean-up tests
# (tests/cleanup/test_llama_server.py). PyPI has only its source, so it is compiled once per
# machine into the test store, which is kept between runs, and installed from that wheel
# into its own venv (its server pulls FastAPI and pydantic-settings, kept out of .venv).
# Built without -march=native, so it runs on any x86-64; only the library is built.
LLAMA_CPP_PYTHON_VERSION="0.3.36"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
-DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF"

ensure_llama_server() {
  local wheels="$VOXTRAY_TEST_HOME/tools/wheels"
  local wheel="llama_cpp_python-${LLAMA_CPP_PYTHON_VERSION}-*.whl"
  [ -x .venv-llama/bin/python ] || "$PYTHON" -m venv .venv-llama
  if .venv-llama/bin/python -c "import llama_cpp.server.app, llama_cpp as l, sys
sys.exit(l.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null; then
    return
  fi
  if ! compgen -G "$wheels/$wheel" >/dev/null; then
    log "compiling llama-cpp-python $LLAMA_CPP_PYTHON_VERSION once, kept in $wheels"
    log "(9 CPU-minutes: about 5 minutes on 2 idle cores, 17 on 2 busy ones)"
    mkdir -p "$wheels"
    local build
    build=$(mktemp -d "$wheels/.build-XXXXXX")
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
      .venv-llama/bin/python -m pip wheel -q --no-deps --no-binary llama-cpp-python \
      -w "$build" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    mv "$build"/$wheel "$wheels"/  # a rename: a half-built wheel is never in the store
    rm -rf "$build"
  fi
  .venv-llama/bin/python -m pip install -q --upgrade pip
  .venv-llama/bin/python -m pip install -q --only-binary llama-cpp-python --find-links "$wheels" \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
}

case "$mode" in
  run)
    check_python
    ensure_system_packages "${run_packages[@]}"
    ensure_venv .
    exec .venv/bin/voxtray "$@"
    ;;
  test)
    check_python
    ensure_system_packages "${run_packages[@]}" "${test_packages[@]}"
    ensure_venv ".[test,peer,serve]"
    .venv/bin/python -m pip install -q --no-deps "$FASTER_WHISPER"
    ensure_peer_servers
    # The suite's models live in their own store, kept between runs (tests/conftest.py).
    export VOXTRAY_TEST_HOME=${VOXTRAY_TEST_HOME:-$HOME/.cache/voxtray-test}
    ensure_llama_server
    VOXTRAY_HOME=$VOXTRAY_TEST_HOME .venv/bin/voxtray models install --defaults whisper-base
    log "bundle (PyInstaller)"
    bash packaging/build.sh
    log "Linux packages (.deb, .tar.zst)"
    bash packaging/linux/build-packages.sh
    log "ruff"
    .venv/bin/ruff check app tests tools
    log "mypy --strict"
    .venv/bin/mypy
    log "pytest"
    exec .venv/bin/python -m pytest "$@"
    ;;
  *)
    echo "usage: packaging/dev.sh run|test [ARGS...]" >&2
    exit 2
    ;;
esac
