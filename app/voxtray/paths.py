"""Where Voxtray keeps its data: one folder, moved as a whole by VOXTRAY_HOME."""

from __future__ import annotations

import os
from pathlib import Path

from voxtray import HOME_ENV as HOME_ENV  # re-exported: where the data folder is named
from voxtray.errors import DiskError, disk_error


def data_home() -> Path:
    """The folder for settings, models and history.

    `VOXTRAY_HOME` wins, so tests and portable installs never touch the user's real data;
    otherwise the platform's user data folder.
    """
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("voxtray", appauthor=False))


def models_dir() -> Path:
    return data_home() / "models"


def check_folder(path: Path, what: str) -> None:
    """Raise a `DiskError` naming `path` when something other than a folder sits there (a
    file, a link to nothing); a path that does not exist yet passes."""
    if path.is_symlink() and not path.exists():
        target = os.readlink(path)
        raise DiskError(f"cannot use {what} {path}: it links to {target}, which does not exist")
    if path.exists() and not path.is_dir():
        raise DiskError(f"cannot use {what} {path}: it is a file, not a folder")


def check_utf8_name(path: Path, what: str) -> None:
    """Raise a `DiskError` when `path`'s name is not valid UTF-8: onnxruntime and
    sherpa-onnx take file names as UTF-8 text and cannot open models under it."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        raise DiskError(
            f"cannot use {what} {printable(path)}: its name is not valid UTF-8, which the "
            f"model libraries cannot open; set {HOME_ENV} to another folder"
        ) from None


def writable_folder(path: Path, what: str) -> Path:
    """Create `path` if needed and check a file can be created in it.

    Raises:
        DiskError: Naming `path`: a file or a dangling link there, a read-only file system,
            no permission, a full disk.
    """
    check_utf8_name(path, what)
    check_folder(path, what)
    import tempfile  # here: `voxtray stop` imports this module and must start fast

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise disk_error(exc, f"{what} {path}") from None
    return path


def printable(name: str | os.PathLike[str]) -> str:
    """A file name as valid UTF-8 text: bytes that are not UTF-8 (kept by Python as lone
    surrogates) are written as \\xNN escapes."""
    text = os.fspath(name)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
