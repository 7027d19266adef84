"""The machine-readable copyright file of a package: Voxtray's licence, then the licence of
every component the bundle carries (read from the installed distributions' metadata).

    python packaging/linux/copyright.py voxtray|voxtray-cuda > copyright
"""

from __future__ import annotations

import sys
from importlib import metadata

# What the bundle carries besides Voxtray itself, with the licence its authors state; a
# distribution missing from the build environment is named with the licence given here.
BUNDLED = {
    "numpy": "BSD-3-Clause",
    "onnx": "Apache-2.0",
    "onnxruntime-gpu": "MIT",
    "sherpa-onnx": "Apache-2.0",
    "sounddevice": "MIT",
    "soundfile": "BSD-3-Clause",
    "PySide6-Essentials": "LGPL-3.0-only",
    "shiboken6": "LGPL-3.0-only",
    "keyboard": "MIT",
    "pynput": "LGPL-3.0-only",
    "python-xlib": "LGPL-2.1-or-later",
    "evdev": "BSD-3-Clause",
    "platformdirs": "MIT",
    "nvidia-ml-py": "BSD-3-Clause",
    "protobuf": "BSD-3-Clause",
    "cffi": "MIT",
    "six": "MIT",
}
NATIVE = {
    "Python 3 interpreter and standard library": "PSF-2.0",
    "Qt 6 (libQt6*)": "LGPL-3.0-only",
    "libsndfile (through soundfile)": "LGPL-2.1-or-later",
}
ORT_NOTICE = "Copyright (c) Microsoft Corporation"
CUDA_ONLY = {"onnxruntime-gpu (CUDA and TensorRT execution providers)": "MIT"}


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not in the build environment"


def stanza(what: str, license_name: str, holder: str = "") -> str:
    notice = holder or f"Copyright (c) the authors of {what.split()[0]}"
    return f"Files: *\nComment: {what}\nCopyright: {notice}\nLicense: {license_name}\n"


def main(package: str) -> None:
    print("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    print("Upstream-Name: voxtray")
    print("Comment: The package carries a self-contained bundle; each component below keeps")
    print(" its own licence. Full licence texts: /usr/share/common-licenses where Debian has")
    print(" them (Apache-2.0, LGPL-2.1, LGPL-3), the others as named by SPDX.")
    print()
    voxtray = stanza(
        f"Voxtray {version('voxtray')}", "MIT", "Copyright (c) 2026 the Voxtray authors"
    )
    print(voxtray)
    if package == "voxtray-cuda":
        for what, name in CUDA_ONLY.items():
            print(stanza(f"{what} {version('onnxruntime-gpu')}", name, ORT_NOTICE))
        return
    for dist, name in BUNDLED.items():
        print(stanza(f"{dist} {version(dist)}", name))
    for what, name in NATIVE.items():
        print(stanza(what, name))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "voxtray")
