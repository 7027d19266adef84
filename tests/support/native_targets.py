"""Native Wayland typing targets that read back what reached them, themselves.

- `BrowserTarget`: Debian's Chromium (``--ozone-platform=wayland``) or Firefox ESR
  (``MOZ_ENABLE_WAYLAND=1``) showing a focused ``<textarea>`` whose value the page posts to
  a loopback HTTP server on every input event;
- `TerminalTarget`: foot running ``cat > FILE`` with echo off;
- the Qt window of ``tests/support/x11.py`` (no accessibility variables) and the GTK3
  window of ``tests/support/atspi.py`` write their own text to a file.

Each is started, waited for until it can take keys (a first read-back, or its window
mapped), and ended by its process id.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from tests.support.process import stop_process

_PAGE = """<!doctype html><meta charset="utf-8"><title>voxtray-target</title>
<textarea id="t" autofocus style="width:95vw;height:80vh"></textarea>
<script>
const t = document.getElementById('t');
let seq = 0;
function post() {
  fetch('/value', {method: 'POST', headers: {'X-Seq': String(++seq)}, body: t.value});
}
t.addEventListener('input', post);
setInterval(() => { t.focus(); }, 200);
post();
</script>"""


class _Receiver(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        body = _PAGE.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        seq = int(self.headers.get("X-Seq", "0"))
        value = self.rfile.read(length).decode("utf-8")
        with self.server.lock:
            self.server.values.append((seq, value))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        return


class _Server(http.server.ThreadingHTTPServer):
    values: list[tuple[int, str]]
    """Each post's number and value: posts run concurrently and may land out of order."""
    lock: threading.Lock


class BrowserTarget:
    """A browser as a native Wayland client with the page focused on its textarea."""

    def __init__(self, browser: str, env: dict[str, str]) -> None:
        self.server = _Server(("127.0.0.1", 0), _Receiver)
        self.server.values = []
        self.server.lock = threading.Lock()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.profile = Path(tempfile.mkdtemp(prefix="voxtray-browser-"))
        if browser == "chromium":
            command = ["chromium", "--ozone-platform=wayland", "--no-sandbox", "--disable-gpu",
                       "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                       f"--user-data-dir={self.profile}", f"--app={url}"]  # fmt: skip
            env = dict(env)
        else:
            command = ["firefox-esr", "--no-remote", "--profile", str(self.profile), url]
            env = {**env, "MOZ_ENABLE_WAYLAND": "1"}
        self.proc = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 90
        while not self.server.values:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError(f"{browser} did not load the page")
            time.sleep(0.1)
        time.sleep(1.0)  # the first paint and the focus

    def text(self) -> str:
        """The textarea's value as last posted (the highest number, not the last to land)."""
        with self.server.lock:
            return max(self.server.values)[1] if self.server.values else ""

    def close(self) -> None:
        stop_process(self.proc)
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.profile, ignore_errors=True)


class TerminalTarget:
    """A terminal running ``cat > FILE`` (echo off): the file holds what it received.

    ``terminal``: "foot", or "konsole" (KDE's own; foot 1.13 dies of SIGFPE as it starts
    on headless kwin 5.27, whose output has no physical size)."""

    def __init__(self, env: dict[str, str], workdir: Path, terminal: str = "foot") -> None:
        self.out = workdir / "terminal.txt"
        self.out.write_bytes(b"")
        script = f"stty -echo -icanon -iexten; echo ready > {self.out}.ready; exec cat > {self.out}"
        if terminal == "konsole":
            command = ["konsole", "--separate", "--nofork", "-e", "sh", "-c", script]
            env = {**env, "QT_QPA_PLATFORM": "wayland"}
        else:
            command = ["foot", "sh", "-c", script]
        self.proc = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while not Path(f"{self.out}.ready").exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"{terminal} did not start")
            time.sleep(0.05)
        time.sleep(0.5)

    def text(self) -> str:
        return self.out.read_bytes().decode("utf-8", "replace")

    def close(self) -> None:
        stop_process(self.proc)
