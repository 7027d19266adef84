#!/usr/bin/env bash
# Build the one-folder bundle dist/voxtray/ with PyInstaller, then smoke-test it.
#
#   packaging/build.sh
#
# Needs the .venv that `packaging/dev.sh run` or `packaging/dev.sh test` sets up.
# packaging/README.md says what the bundle holds and how to install it.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'build.sh: %s\n' "$*" >&2; }

[ -x .venv/bin/python ] || { log "no .venv: run packaging/dev.sh run (or test) first"; exit 1; }
if ! .venv/bin/python -c 'import PyInstaller' 2>/dev/null; then
  log "installing PyInstaller into .venv"
  .venv/bin/python -m pip install -q "pyinstaller>=6,<7"
fi

bundle=dist/voxtray
start=$(date +%s)
.venv/bin/python -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build packaging/voxtray.spec
# Desktop integration files, laid out as under ~/.local/share (see packaging/README.md).
install -Dm644 resources/org.voxtray.Voxtray.desktop "$bundle/share/applications/org.voxtray.Voxtray.desktop"
install -Dm644 resources/icons/voxtray.svg "$bundle/share/icons/hicolor/scalable/apps/voxtray.svg"
elapsed=$(($(date +%s) - start))

# A clean environment, as on a machine without Python: nothing can come from .venv.
run() { env -i PATH=/usr/bin:/bin HOME="$HOME" "$bundle/voxtray" "$@"; }
log "smoke test: $bundle/voxtray --version"
run --version
log "smoke test: $bundle/voxtray models list --json"
run models list --json

log "built in ${elapsed}s; $(du -sh "$bundle" | cut -f1) in $bundle"
