#!/bin/sh
# Install Voxtray (or its voxtray-cuda add-on) from this unpacked archive, for one user
# or, as root with --system, for everyone:
#
#   ./install.sh [--system]               copy usr/ into ~/.local (or /usr/local), link the command
#   ./install.sh --uninstall [--system]   remove what install.sh made there, and nothing else
#
# Installing over an earlier install is an upgrade: an installed CUDA add-on is kept when it
# fits the new onnxruntime (and is named when it does not). A file in the way that
# install.sh did not make (your own ~/.local/bin/voxtray, say) is never overwritten, and
# never removed. User data (~/.local/share/voxtray: settings, models, history) is never
# touched. What install.sh made is listed in lib/voxtray/.install-manifest.
#
# Exit codes: 0 done; 2 bad arguments; 3 nothing to uninstall, or the add-on without
# Voxtray; 6 cannot write there (--system needs root), or a file is in the way that
# install.sh did not make. Nothing is changed when it stops with an error.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix="${HOME}/.local"
action=install
system=""
for arg in "$@"; do
  case "$arg" in
    --system) prefix=/usr/local system=" --system" ;;
    --uninstall) action=uninstall ;;
    *) echo "usage: install.sh [--system] [--uninstall]" >&2; exit 2 ;;
  esac
done
lib="$prefix/lib/voxtray"
manifest="$lib/.install-manifest"
capi=_internal/onnxruntime/capi
# What install.sh places outside $lib, relative to $prefix (fixed names: no quoting needed).
shared="share/applications/org.voxtray.Voxtray.desktop share/icons/hicolor/scalable/apps/voxtray.svg"
folders="lib bin share/applications share/icons/hicolor/scalable/apps"

fail() {
  code=$1
  shift
  printf 'install.sh: %s\n' "$*" >&2
  exit "$code"
}

# Whether $1 can be made or replaced: the nearest folder that exists on its way is writable.
can_write() {
  set -- "$1"
  while [ ! -e "$1" ] && [ ! -L "$1" ]; do set -- "${1%/*}"; [ -n "$1" ] || set -- /; done
  [ -d "$1" ] && [ -w "$1" ]
}

need_write() {
  for rel in "$@"; do
    if ! can_write "$prefix/$rel"; then
      hint=""
      if [ -n "$system" ] && [ "$(id -u)" -ne 0 ]; then
        again="$system"
        [ "$action" = install ] || again="$again --uninstall"
        hint=" (--system needs root: sudo $0$again)"
      fi
      fail 6 "cannot write to $prefix/$rel$hint"
    fi
  done
}

sha() { sha256sum <"$1" | cut -d' ' -f1; }

is_voxtray() { [ -d "$1" ] && [ ! -L "$1" ] && [ -x "$1/voxtray" ] && [ -d "$1/_internal" ]; }

ours_link() { [ -L "$prefix/bin/voxtray" ] && [ "$(readlink "$prefix/bin/voxtray")" = "$lib/voxtray" ]; }

# Whether $prefix/$1 is the file install.sh put there: listed in the manifest with the content
# it has now; without a manifest (an install by an older install.sh), the same as this
# archive's, or, when installing over such an install, any regular file.
ours_file() {
  if [ -f "$manifest" ]; then
    grep -qxF "file $1 $(sha "$prefix/$1")" "$manifest"
  elif [ -f "$prefix/$1" ] && [ ! -L "$prefix/$1" ]; then
    [ "$action" = install ] && is_voxtray "$lib" || [ "$(sha "$prefix/$1")" = "$(sha "$here/usr/$1")" ]
  else
    return 1
  fi
}

# Folders made by this run, relative to $prefix, parents first.
made=""
make_dir() {
  [ -d "$prefix/$1" ] && return 0
  case "$1" in
    */*) make_dir "${1%/*}" ;;
    *) if [ ! -d "$prefix" ]; then mkdir -p "$prefix"; made="$made ."; fi ;;
  esac
  mkdir "$prefix/$1"
  made="$made $1"
}

# (sh has no local variables: each function's names are its own.)
same_onnxruntime() {
  runtime_was=$(cd "$1/_internal" && ls -d onnxruntime*.dist-info 2>/dev/null || true)
  runtime_now=$(cd "$2/_internal" && ls -d onnxruntime*.dist-info 2>/dev/null || true)
  [ -n "$runtime_was" ] && [ "$runtime_was" = "$runtime_now" ]
}

# The add-on's provider libraries in the install $1 that the new tree $2 lacks go into it,
# when both are the same onnxruntime build; otherwise they are dropped, and said so.
keep_addon() {
  addon=""
  for file in "$1/$capi"/libonnxruntime_providers_*.so; do
    [ -f "$file" ] && [ ! -e "$2/$capi/${file##*/}" ] || continue
    if same_onnxruntime "$1" "$2"; then
      cp -p "$file" "$2/$capi/"
      addon=kept
    else
      addon=dropped
    fi
  done
  case "$addon" in
    kept) echo "The CUDA add-on stays installed." ;;
    dropped) echo "The installed CUDA add-on was made for another onnxruntime and was removed:" \
      "install the voxtray-cuda archive of this version with its install.sh." ;;
  esac
}

install_addon() {
  is_voxtray "$lib" || fail 3 "install Voxtray first, then this add-on (no Voxtray in $lib)"
  need_write "lib/voxtray/$capi"
  cp -R "$here/usr/lib/voxtray/." "$lib/"
  echo "CUDA add-on installed into $lib (check with: voxtray selftest)"
}

uninstall_addon() {
  is_voxtray "$lib" || fail 3 "no Voxtray in $lib: nothing removed"
  files=$(cd "$here/usr/lib/voxtray" && find . -type f)
  found=""
  for rel in $files; do [ ! -e "$lib/$rel" ] || found=yes; done
  [ -n "$found" ] || fail 3 "the CUDA add-on is not installed in $lib: nothing removed"
  need_write "lib/voxtray/$capi"
  for rel in $files; do rm -f "$lib/$rel"; done
  echo "CUDA add-on removed from $lib"
}

check_nothing_in_the_way() {
  if [ -e "$lib" ] || [ -L "$lib" ]; then
    is_voxtray "$lib" || fail 6 "$lib is in the way and is not a Voxtray install: move it away first"
  fi
  if [ -e "$prefix/bin/voxtray" ] || [ -L "$prefix/bin/voxtray" ]; then
    ours_link || fail 6 "$prefix/bin/voxtray is in the way and is not the link install.sh made:" \
      "move it away first"
  fi
  for rel in $shared; do
    if [ -e "$prefix/$rel" ] || [ -L "$prefix/$rel" ]; then
      ours_file "$rel" || fail 6 "$prefix/$rel is in the way and is not the file install.sh made:" \
        "move it away first"
    fi
  done
}

install_base() {
  check_nothing_in_the_way
  need_write $folders
  earlier=""
  [ ! -f "$manifest" ] || earlier=$(grep '^dir ' "$manifest" || true)
  make_dir lib
  new="$prefix/lib/.voxtray-new.$$" old="$prefix/lib/.voxtray-old.$$"
  trap 'rm -rf "$new" "$old"' EXIT
  trap 'exit 130' INT TERM
  cp -R "$here/usr/lib/voxtray" "$new"
  [ ! -d "$lib" ] || keep_addon "$lib" "$new"
  make_dir bin
  for rel in $shared; do make_dir "${rel%/*}"; done
  {
    [ -z "$earlier" ] || printf '%s\n' "$earlier"
    for folder in $made; do echo "dir $folder"; done
    echo "link bin/voxtray"
    for rel in $shared; do echo "file $rel $(sha "$here/usr/$rel")"; done
  } >"$new/.install-manifest"
  [ ! -d "$lib" ] || mv "$lib" "$old"
  mv "$new" "$lib"
  ln -sfn "$lib/voxtray" "$prefix/bin/voxtray"
  for rel in $shared; do cp "$here/usr/$rel" "$prefix/$rel"; done
  echo "Voxtray installed into $lib; run: $prefix/bin/voxtray"
}

uninstall_base() {
  if [ ! -e "$lib" ] && [ ! -L "$lib" ]; then
    fail 3 "no Voxtray installed in $prefix: nothing removed"
  fi
  is_voxtray "$lib" || fail 6 "$lib is not a Voxtray install: nothing removed"
  need_write $folders
  kept=""
  if ours_link; then
    rm -f "$prefix/bin/voxtray"
  elif [ -e "$prefix/bin/voxtray" ] || [ -L "$prefix/bin/voxtray" ]; then
    kept="$kept bin/voxtray"
  fi
  for rel in $shared; do
    if ours_file "$rel"; then
      rm -f "$prefix/$rel"
    elif [ -e "$prefix/$rel" ] || [ -L "$prefix/$rel" ]; then
      kept="$kept $rel"
    fi
  done
  folders_made=""
  [ ! -f "$manifest" ] || folders_made=$(sed -n 's/^dir //p' "$manifest" | sort -r)
  rm -rf "$lib"
  for folder in $folders_made; do
    if [ "$folder" = . ]; then rmdir "$prefix" 2>/dev/null || true; else
      rmdir "$prefix/$folder" 2>/dev/null || true
    fi
  done
  echo "Voxtray removed from $prefix (your settings and models stay in ~/.local/share/voxtray)"
  for rel in $kept; do echo "Left in place, not the one install.sh made: $prefix/$rel"; done
}

if [ -d "$here/usr/lib/voxtray/$capi" ] && [ ! -e "$here/usr/lib/voxtray/voxtray" ]; then
  if [ "$action" = install ]; then install_addon; else uninstall_addon; fi
elif [ "$action" = install ]; then
  install_base
else
  uninstall_base
fi
