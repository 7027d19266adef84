"""Minimal Debian roots for the package tests: made once per release with debootstrap from
Debian's registry and kept as tarballs in the test store (CI caches it), unpacked fresh
for each test module and entered with chroot. The packages apt downloads into a root are
kept in the test store too, so a later run installs the same ones without fetching them."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.models import suite_home

CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
NOBODY = "65534:65534"  # Debian's unprivileged user, there in every root
# What a user's own use of the system writes, which no package owns.
NOT_THE_PACKAGE = ("var/lib/apt", "var/lib/dpkg", "var/cache", "var/log", "tmp", "proc", "dev")
# Made by the maintainer scripts of dependencies (ca-certificates' links and settings,
# netbase's host files), which Debian leaves in place when those are purged.
DEPENDENCIES_MADE = ("etc/ssl/certs/", "etc/ca-certificates.conf", "etc/hosts", "etc/networks")


def _mirror() -> str:
    """The Debian mirror this machine's apt uses."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def debian_tarball(suite: str) -> Path:
    """A minbase root of Debian `suite` as a tarball, made once with debootstrap and kept."""
    cached = suite_home() / f"debian-{suite}-minbase.tar"
    if cached.is_file():
        return cached
    build = cached.with_suffix(".build")
    shutil.rmtree(build, ignore_errors=True)
    subprocess.run(
        ["debootstrap", "--variant=minbase", suite, str(build), _mirror()],
        check=True,
        capture_output=True,
        timeout=1200,
    )
    partial = cached.with_suffix(".part")
    subprocess.run(["tar", "-C", str(build), "-cf", str(partial), "."], check=True)
    partial.rename(cached)
    shutil.rmtree(build)
    return cached


@dataclass
class Root:
    """A fresh Debian root with /proc, /dev and the X socket folder mounted in."""

    path: Path
    suite: str

    def run(
        self,
        *command: str,
        env: dict[str, str] | None = None,
        timeout: float = 600,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`command` in the root, as root or as `user` ("uid:gid")."""
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root"}
        environ.update(env or {})
        environ["DEBIAN_FRONTEND"] = "noninteractive"
        as_user = [f"--userspec={user}"] if user else []
        return subprocess.run(
            [CHROOT, *as_user, str(self.path), *command],
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, *command: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", **env}
        log = (self.path / "tmp" / "app.log").open("wb")
        return subprocess.Popen(
            [CHROOT, str(self.path), *command], env=environ, stdout=log, stderr=log
        )

    def owned(self) -> set[str]:
        """Every path an installed package of the root owns, as dpkg lists them."""
        owned = set()
        for listing in (self.path / "var/lib/dpkg/info").glob("*.list"):
            owned |= {line.lstrip("/") for line in listing.read_text().splitlines() if line}
        return owned

    def left_by(self, before: set[str], *also_not: str) -> set[str]:
        """Files that are new since `before` and that no installed package owns, less
        what the dependencies' own scripts made."""
        new = self.files(*also_not) - before - self.owned()
        return {f for f in new if not f.startswith(DEPENDENCIES_MADE)}

    def files(self, *also_not: str) -> set[str]:
        """Every file outside the folders apt, logs and the user's data write to."""
        return self._walk(NOT_THE_PACKAGE + also_not, folders=False)

    def folders(self, *also_not: str) -> set[str]:
        """Every folder outside the folders apt, logs and the user's data write to."""
        return self._walk(NOT_THE_PACKAGE + also_not, folders=True)

    def _walk(self, skip: tuple[str, ...], folders: bool) -> set[str]:
        found = set()
        for folder, subfolders, names in os.walk(self.path):
            rel = Path(folder).relative_to(self.path).as_posix()
            # Pruned, not filtered: /proc and the mounted sockets change while walked.
            subfolders[:] = [
                d for d in subfolders if not f"{rel}/{d}".lstrip("./").startswith(skip)
            ]
            found |= {f"{rel}/{n}".lstrip("./") for n in (subfolders if folders else names)}
        return {f for f in found if not f.startswith(skip)}


def mount_in(
    stack: contextlib.ExitStack, root: Path, mounts: list[tuple[str, str]], bind: str = "--bind"
) -> None:
    """Mount each (this machine's path, or "proc"; the path inside) into `root`, with
    `bind` ("--rbind" takes the mounts beneath too); each unmounted when `stack` closes."""
    for source, inside in mounts:
        target = root / inside.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        args = ["-t", "proc", "proc"] if source == "proc" else [bind, source]
        subprocess.run(["mount", *args, str(target)], check=True)
        stack.callback(subprocess.run, ["umount", "-l", str(target)])


@contextlib.contextmanager
def debian_root(suite: str, where: Path) -> Iterator[Root]:
    """A fresh root of `suite` under `where`, on this machine's network, with /proc, /dev,
    /tmp/.X11-unix and apt's download folder (kept in the test store) mounted in;
    unmounted on leaving, whatever happened."""
    root = Root(where / "root", suite)
    root.path.mkdir()
    subprocess.run(["tar", "-C", str(root.path), "-xf", str(debian_tarball(suite))], check=True)
    shutil.copy("/etc/resolv.conf", root.path / "etc" / "resolv.conf")
    # The root trusts the certificate authorities this machine added (a proxy's, where
    # there is one); ca-certificates picks them up.
    local_cas = root.path / "usr/local/share/ca-certificates"
    local_cas.mkdir(parents=True, exist_ok=True)
    for ca in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        shutil.copy(ca, local_cas / ca.name)
    x11 = Path("/tmp/.X11-unix")  # made by the first X server otherwise, after the mount
    if not x11.is_dir():
        x11.mkdir()
        x11.chmod(0o1777)
    downloads = suite_home() / f"debian-{suite}-apt-archives"
    downloads.mkdir(exist_ok=True)
    mounts = [("proc", "/proc"), ("/dev", "/dev"), (str(x11), str(x11))]
    mounts.append((str(downloads), "/var/cache/apt/archives"))
    with contextlib.ExitStack() as stack:
        mount_in(stack, root.path, mounts)
        yield root
        root.run("apt-get", "autoclean")  # drops what the registry no longer has
