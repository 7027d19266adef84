#!/usr/bin/env bash
# Linux packages from the one-folder bundle (packaging/build.sh builds dist/voxtray first):
#
#   packaging/linux/build-packages.sh        dist/voxtray_VERSION_amd64.deb
#                                            dist/voxtray-cuda_VERSION_amd64.deb
#                                            dist/voxtray-VERSION-x86_64.tar.zst (+ -cuda-)
#
# The base packages carry onnxruntime's core and CPU provider; the CUDA and TensorRT
# provider libraries of the same onnxruntime build go to the `voxtray-cuda` add-on, which
# installs them into the same folder. packaging/README.md says why each part is where it is.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf 'build-packages.sh: %s\n' "$*" >&2; }

bundle=dist/voxtray
[ -x "$bundle/voxtray" ] || { log "no bundle: run packaging/build.sh first"; exit 1; }
for tool in dpkg-deb fakeroot zstd; do
  command -v "$tool" >/dev/null || { log "needs $tool (apt-get install dpkg-dev fakeroot zstd)"; exit 1; }
done

version=$(.venv/bin/python -c 'import voxtray; print(voxtray.__version__)')
maintainer="Voxtray maintainers <voxtray@localhost>"
arch=amd64
capi=_internal/onnxruntime/capi
gpu_libs=(libonnxruntime_providers_cuda.so libonnxruntime_providers_tensorrt.so)
work=build/packages
rm -rf "$work" && mkdir -p "$work"

# --- the trees -----------------------------------------------------------------------------
base=$work/voxtray cuda=$work/voxtray-cuda
mkdir -p "$base/usr/lib" "$base/usr/bin" "$cuda/usr/lib/voxtray/$capi"
cp -a "$bundle" "$base/usr/lib/voxtray"
rm -rf "$base/usr/lib/voxtray/share"
for lib in "${gpu_libs[@]}"; do
  mv "$base/usr/lib/voxtray/$capi/$lib" "$cuda/usr/lib/voxtray/$capi/$lib"
done
ln -s ../lib/voxtray/voxtray "$base/usr/bin/voxtray"
install -Dm644 resources/org.voxtray.Voxtray.desktop "$base/usr/share/applications/org.voxtray.Voxtray.desktop"
install -Dm644 resources/icons/voxtray.svg "$base/usr/share/icons/hicolor/scalable/apps/voxtray.svg"
for tree in "$base" "$cuda"; do
  name=$(basename "$tree")
  doc=$tree/usr/share/doc/$name
  install -d "$doc"
  .venv/bin/python packaging/linux/copyright.py "$name" >"$doc/copyright"
  printf '%s (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n' \
    "$name" "$version" "$version" "$maintainer" \
    "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}")" \
    | gzip -9n >"$doc/changelog.gz"
  install -Dm644 "packaging/linux/lintian-overrides/$name" "$tree/usr/share/lintian/overrides/$name"
done
install -d "$base/usr/share/man/man1"
gzip -9n <packaging/linux/voxtray.1 >"$base/usr/share/man/man1/voxtray.1.gz"
# Modes as dpkg expects them. Nothing is stripped: the wheels' libraries were relinked by
# their build (patchelf), and strip breaks their load segments (numpy's OpenBLAS then fails
# with "ELF load command address/offset not page-aligned").
find "$work" -type d -exec chmod 0755 {} +
find "$work" -type f -exec chmod u+rw,go+r,go-w {} +
find "$work" -type f -name '*.so*' -exec chmod 0644 {} +

# --- .deb ----------------------------------------------------------------------------------
control() {  # name size depends recommends description
  cat <<CONTROL
Package: $1
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $2
Section: utils
Priority: optional
Homepage: https://voxtray.invalid/
$3
$4
Description: $5
CONTROL
}
# Debian 13 renamed ALSA's and GLib's libraries for 64-bit time (libasound2t64,
# libglib2.0-0t64; the old names are only provided there): the new name first, so apt picks
# it on 13 and later, and the old one for Debian 12.
base_depends="Depends: libc6 (>= 2.34), libasound2t64 | libasound2, libportaudio2, libegl1, \
libgl1, libfontconfig1, libfreetype6, libdbus-1-3, libglib2.0-0t64 | libglib2.0-0, libxkbcommon0, \
libxkbcommon-x11-0, libx11-6, libx11-xcb1, libxcb1, libxcb-cursor0, libxcb-icccm4, libxcb-image0, \
libxcb-keysyms1, libxcb-randr0, libxcb-render-util0, libxcb-shape0, libxcb-xkb1, libxcb-xfixes0, \
libxcb-shm0, libxcb-sync1, libxcb-render0, libxcb-glx0, libwayland-client0, libwayland-cursor0, \
libwayland-egl1, libdrm2, ca-certificates"
mkdir -p "$base/DEBIAN" "$cuda/DEBIAN"
control voxtray "$(du -sk --exclude=DEBIAN "$base" | cut -f1)" "$base_depends" \
  "Recommends: xdotool, xclip, wtype, wl-clipboard" \
  "push-to-talk dictation with local speech-to-text
 Hold a hotkey, speak, release: the words are typed into the focused window.
 Speech is recognised on this machine (Silero VAD, Whisper, Parakeet,
 Moonshine); the default models are fetched and verified on first start.
 GPU support comes with the voxtray-cuda package." >"$base/DEBIAN/control"
control voxtray-cuda "$(du -sk --exclude=DEBIAN "$cuda" | cut -f1)" "Depends: libc6 (>= 2.34), voxtray (= $version)" \
  "Suggests: nvidia-driver" \
  "CUDA and TensorRT support for Voxtray
 The CUDA and TensorRT execution providers of the onnxruntime build that
 Voxtray carries. They need an NVIDIA driver and the CUDA 13 and cuDNN 9
 libraries (from the system, or from pip: voxtray selftest names them)." >"$cuda/DEBIAN/control"
for tree in "$base" "$cuda"; do
  name=$(basename "$tree")
  out=dist/${name}_${version}_${arch}.deb
  fakeroot dpkg-deb --build -Zxz -z1 --threads-max=0 "$tree" "$out" >/dev/null
  log "$out: $(du -h "$out" | cut -f1), installed $(du -sh --exclude=DEBIAN "$tree" | cut -f1)"
done

# --- .tar.zst with an install script (no AppImage: see packaging/README.md) ------------------
for tree in "$base" "$cuda"; do
  name=$(basename "$tree")
  stage=$work/tar/$name-$version
  mkdir -p "$stage"
  cp -a "$tree/usr" "$stage/"
  rm -f "$stage/usr/bin/voxtray"
  rmdir "$stage/usr/bin" 2>/dev/null || true
  install -m755 packaging/linux/install.sh "$stage/install.sh"
  out=dist/$name-$version-x86_64.tar.zst
  tar -C "$work/tar" --owner=0 --group=0 -cf - "$name-$version" | zstd -q -T0 -6 -o "$out" -f
  log "$out: $(du -h "$out" | cut -f1)"
done
