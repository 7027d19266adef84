"""PyInstaller runtime hook (Linux): the one-folder bundle on any distribution.

- The bootloader prepends the bundle to LD_LIBRARY_PATH, saving the user's value as
  LD_LIBRARY_PATH_ORIG. This process has already started with it (glibc reads it once), so
  only child processes see a change here: system tools such as xdotool, wtype and xclip
  must get the user's value back, not the bundle's copies of libX11, libxcb or libstdc++.
- ctypes.util.find_library never looks in the bundle, so libraries loaded by name through
  ctypes (PortAudio for sounddevice) fall back to the bundle's copy when the system has none.
- The bundled OpenSSL looks for CA certificates where the build host's distribution keeps
  them; elsewhere (Fedora, openSUSE, Alpine) point it at the system's bundle, or model
  downloads fail certificate verification.
"""

import glob
import os
import sys

_CA_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Arch, Gentoo
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/ssl/cert.pem",  # Alpine, macOS-like layouts
)

if sys.platform.startswith("linux"):
    import ctypes.util
    import ssl

    _saved = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if _saved is None:
        os.environ.pop("LD_LIBRARY_PATH", None)
    else:
        os.environ["LD_LIBRARY_PATH"] = _saved

    _system_find_library = ctypes.util.find_library

    def _find_library(name: str) -> str | None:
        found = _system_find_library(name)
        if found is None:
            bundled = sorted(glob.glob(os.path.join(sys._MEIPASS, f"lib{name}.so*")))
            found = bundled[0] if bundled else None
        return found

    ctypes.util.find_library = _find_library

    _paths = ssl.get_default_verify_paths()  # cafile/capath are None where absent
    if _paths.cafile is None and not (_paths.capath and os.listdir(_paths.capath)):
        _found = next((path for path in _CA_BUNDLES if os.path.isfile(path)), None)
        if _found is not None and not os.environ.get("SSL_CERT_DIR"):
            os.environ.setdefault("SSL_CERT_FILE", _found)
