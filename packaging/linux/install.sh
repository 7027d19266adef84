#!/bin/sh
# Install Voxtray (or its voxtray-cuda add-on) from this unpacked archive, for one user
# or, as root with --system, for everyone:
#
#   ./install.sh [--system]          copy usr/ into ~/.local (or /usr/local), link the command
#   ./install.sh --uninstall [--system]
#
# User data (~/.local/share/voxtray: settings, models, history) is never touched.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix="${HOME}/.local"
action=install
for arg in "$@"; do
  case "$arg" in
    --system) prefix=/usr/local ;;
    --uninstall) action=uninstall ;;
    *) echo "usage: install.sh [--system] [--uninstall]" >&2; exit 2 ;;
  esac
done
lib="$prefix/lib/voxtray"
if [ "$action" = uninstall ]; then
  rm -rf "$lib"
  rm -f "$prefix/bin/voxtray" "$prefix/share/applications/voxtray.desktop" \
    "$prefix/share/icons/hicolor/scalable/apps/voxtray.svg"
  echo "Voxtray removed from $prefix (your settings and models stay in ~/.local/share/voxtray)"
  exit 0
fi
if [ -d "$here/usr/lib/voxtray/_internal/onnxruntime/capi" ] && [ ! -e "$here/usr/lib/voxtray/voxtray" ]; then
  [ -x "$lib/voxtray" ] || { echo "install Voxtray first, then this add-on" >&2; exit 1; }
  cp -R "$here/usr/lib/voxtray/." "$lib/"
  echo "CUDA add-on installed into $lib (check with: voxtray selftest)"
  exit 0
fi
mkdir -p "$prefix/lib" "$prefix/bin"
rm -rf "$lib"
cp -R "$here/usr/lib/voxtray" "$lib"
ln -sf "$lib/voxtray" "$prefix/bin/voxtray"
for rel in share/applications/voxtray.desktop share/icons/hicolor/scalable/apps/voxtray.svg; do
  mkdir -p "$(dirname "$prefix/$rel")"
  cp "$here/usr/$rel" "$prefix/$rel"
done
echo "Voxtray installed into $lib; run: $prefix/bin/voxtray"
