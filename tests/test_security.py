"""Security properties of the code base and of the model downloads.

1. No unsafe deserialisation or code evaluation in app/ (pickle family, torch.load,
   numpy allow_pickle, eval/exec): an AST scan, so comments and `qapp.exec()` do not count.
2. Every subprocess call in app/ passes an argument list, never a shell string.
3. Downloads refuse non-HTTPS URLs except loopback (and file://); a sha256 mismatch is
   refused and the file removed. Covered in test_download.py:
   test_insecure_urls_refused_without_connecting, test_redirect_to_insecure_url_refused,
   test_allowed_urls, test_sha_mismatch_removes_part_and_leaves_no_dest; and in
   test_store.py: test_pinned_hash_mismatch_installs_nothing, test_tampered_wheel_is_refused.
   Here: URLs crafted to look local that must still be refused.
4. The catalog: PyPI entries pin sha256 for wheels and files (also test_store.py
   test_real_catalog_is_consistent), URL entries are https; which URL entries are unpinned,
   and what installing one does today: refused (exit 2) unless --allow-unpinned (also
   test_store.py test_unpinned_download_is_refused_unless_trusted), then trust on first use.
5. The control socket: 0600 in a 0700 folder (test_control.py
   test_commands_round_trip_and_permissions); here a loose folder is tightened, and a
   process of another uid is refused, by the folder and by the server's peer-uid check.
6. No network access at import or start: `import voxtray.cli.main, voxtray.ui.app`,
   `voxtray --version`
   and `voxtray models list`, in-process and in fresh interpreters.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.audio import REPO
from tests.support.process import one_error_line
from tests.support.store import EXTRA, WEIGHTS, Setup, make_tarball
from voxtray.control.server import ControlServer, send
from voxtray.errors import CorruptError, ExitCode, NetworkError
from voxtray.models.catalog import PypiSource, UrlSource, load_catalog
from voxtray.models.download import check_url, download
from voxtray.models.store import ModelStore

APP = REPO / "app" / "voxtray"
NOBODY = 65534


def app_modules() -> list[tuple[str, ast.Module]]:
    sources = sorted(APP.rglob("*.py"))
    assert len(sources) > 40, "the scan found too few modules to mean anything"
    return [
        (str(path.relative_to(REPO)), ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sources
    ]


def _dotted(node: ast.expr) -> str:
    """`a.b.c` for a Name/Attribute chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# --- 1: unsafe deserialisation and evaluation ----------------------------------------------

UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "shelve", "marshal", "dill", "cloudpickle"}
UNSAFE_MODULES |= {"joblib", "torch"}


def unsafe_code(tree: ast.Module) -> list[str]:
    """Lines that could run code hidden in data: pickle-family imports, torch.load,
    numpy loads with allow_pickle, and the eval/exec builtins."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            found += [
                f"{node.lineno}: import {n}" for n in names if n.split(".")[0] in UNSAFE_MODULES
            ]
        if not isinstance(node, ast.Call):
            continue
        called = _dotted(node.func)
        if called in ("eval", "exec", "builtins.eval", "builtins.exec", "torch.load"):
            found.append(f"{node.lineno}: {called}()")
        pickled = any(
            k.arg == "allow_pickle"
            and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for k in node.keywords
        )
        if pickled:
            found.append(f"{node.lineno}: {called}(allow_pickle=...)")
    return found


def test_unsafe_code_scanner_sees_what_it_must() -> None:
    """The scanner itself: it flags each pattern and ignores method calls named exec."""
    sample = textwrap.dedent(
        """\
        import pickle
        from shelve import open
        torch.load("model.pt")
        eval("1 + 1")
        exec("x = 1")
        builtins.eval("2")
        np.load("a.npy", allow_pickle=True)
        qapp.exec()
        re.compile("x")
        np.load("a.npy", allow_pickle=False)
        # eval("in a comment")
        """
    )
    flagged = [int(line.split(":")[0]) for line in unsafe_code(ast.parse(sample))]
    assert flagged == [1, 2, 3, 4, 5, 6, 7]


def test_no_unsafe_deserialisation_or_eval_in_app() -> None:
    """Model files and settings are data: nothing in app/ may unpickle or evaluate."""
    problems = [f"{path}:{line}" for path, tree in app_modules() for line in unsafe_code(tree)]
    assert problems == []


# --- 2: subprocess calls ---------------------------------------------------------------------

SPAWN = {"run", "Popen", "call", "check_call", "check_output"}
SHELL_ONLY = {
    "os.system",
    "os.popen",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell",
}
SEQUENCE_HINTS = ("Sequence", "list", "tuple", "Iterable", "Collection")


def _is_arg_list(node: ast.expr, scope: ast.AST | None) -> bool:
    """Whether `node` is evidently a list of arguments rather than a command string."""
    if isinstance(node, ast.List | ast.Tuple | ast.ListComp):
        return True
    if isinstance(node, ast.Call) and _dotted(node.func) in ("list", "tuple", "sorted"):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_arg_list(node.left, scope) and _is_arg_list(node.right, scope)
    if isinstance(node, ast.Name) and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = scope.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if arg.arg == node.id and arg.annotation is not None:
                hint = ast.unparse(arg.annotation)
                return any(word in hint for word in SEQUENCE_HINTS)
        values = [
            child.value
            for child in ast.walk(scope)
            if isinstance(child, ast.Assign | ast.AnnAssign)
            and child.value is not None
            and any(
                isinstance(t, ast.Name) and t.id == node.id
                for t in (child.targets if isinstance(child, ast.Assign) else [child.target])
            )
        ]
        return bool(values) and all(_is_arg_list(value, None) for value in values)
    return False


def process_calls(tree: ast.Module) -> tuple[int, list[str]]:
    """(subprocess calls seen, problems): shell=True, a string command, a shell-only API."""
    from_subprocess = {
        alias.asname or alias.name: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "subprocess"
        for alias in node.names
    }
    seen, problems = 0, []

    def visit(node: ast.AST, scope: ast.AST | None) -> None:
        nonlocal seen
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            scope = node
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            if called in SHELL_ONLY or from_subprocess.get(called, "") in SHELL_ONLY:
                problems.append(f"{node.lineno}: {called}() always uses a shell")
            target = from_subprocess.get(called) or called.removeprefix("subprocess.")
            if target in SPAWN and (called.startswith("subprocess.") or called in from_subprocess):
                seen += 1
                command = node.args[0] if node.args else None
                for keyword in node.keywords:
                    if keyword.arg == "args":
                        command = keyword.value
                    shell = keyword.value
                    if keyword.arg == "shell" and not (
                        isinstance(shell, ast.Constant) and shell.value is False
                    ):
                        problems.append(f"{node.lineno}: {called}(shell=...)")
                if command is None or not _is_arg_list(command, scope):
                    problems.append(f"{node.lineno}: {called}() without an argument list")
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, None)
    return seen, problems


def test_process_call_scanner_sees_what_it_must() -> None:
    """The scanner itself, on good and bad calls of every spelling."""
    sample = textwrap.dedent(
        """\
        import subprocess
        from subprocess import Popen as P, check_output
        def good(args: Sequence[str]) -> None:
            subprocess.run(list(args))
            subprocess.run(["a", "b"], check=False)
            cmd = ["x", "y"]
            subprocess.Popen(cmd, shell=False)
            subprocess.run(args)
            check_output(["a"] + list(args))
        def bad(cmd: str, name) -> None:
            subprocess.run("ls -l")
            subprocess.run(f"ls {name}")
            subprocess.call(["ls"], shell=True)
            check_output(cmd)
            P(" ".join(["a", name]))
            os.system("ls")
            subprocess.getoutput("ls")
            subprocess.run(name)
        """
    )
    seen, problems = process_calls(ast.parse(sample))
    assert seen == 11
    assert [int(p.split(":")[0]) for p in problems] == [11, 12, 13, 14, 15, 16, 17, 18]


def test_every_subprocess_call_in_app_passes_an_argument_list() -> None:
    """No command in app/ goes through a shell: typed text and file names in arguments
    can never become shell syntax."""
    total, problems = 0, []
    for path, tree in app_modules():
        seen, found = process_calls(tree)
        total += seen
        problems += [f"{path}:{problem}" for problem in found]
    assert problems == []
    assert total >= 3, "the scan found none of the known subprocess calls"


# --- 3: download URL policy --------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1.nip.io/model.bin",  # a public name that resolves to loopback
        "http://localhost.example.com/model.bin",
        "http://localhost./model.bin",
        "http://127.0.0.1@example.com/model.bin",  # userinfo, then the real host
        "http://example.com#@127.0.0.1/model.bin",
        "http://2130706433/model.bin",  # 127.0.0.1 as one integer
        "http://0x7f.1/model.bin",
        "http://[::ffff:127.0.0.1]/model.bin",
        "HTTP://example.com/model.bin",
        "gopher://127.0.0.1/model.bin",
        "//example.com/model.bin",
    ],
)
def test_urls_dressed_up_as_local_are_refused(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a literal loopback host may use plain http; look-alikes are refused before any
    name look-up or connection."""

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network used for {url}")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(NetworkError, match="refusing insecure URL"):
        check_url(url)
    with pytest.raises(NetworkError, match="refusing insecure URL"):
        download(url, tmp_path / "model.bin")
    assert list(tmp_path.iterdir()) == []


# --- 4: the catalog ---------------------------------------------------------------------------

# URL entries whose archive has no published sha256 that could be cross-checked; they
# install only with the user's consent, and what arrived is then trusted on first use.
# Pinning one of these is welcome.
KNOWN_UNPINNED = {
    "sherpa-whisper-tiny.en",
    "sherpa-whisper-base",
    "sherpa-whisper-small.en",
    "sherpa-whisper-distil-small.en",
    "sherpa-whisper-turbo",
    "parakeet-tdt-ctc-110m-fp32",
}
SHA256 = re.compile(r"[0-9a-f]{64}")


def test_pypi_entries_pin_every_wheel_and_file() -> None:
    """A wheel's hash comes from the catalog, never from the index that serves it."""
    pypi = [e for e in load_catalog().models.values() if isinstance(e.source, PypiSource)]
    assert {e.name for e in pypi} >= {"silero-vad-v6", "whisper-tiny.en", "whisper-base"}
    for entry in pypi:
        assert isinstance(entry.source, PypiSource)
        for wheel in entry.source.wheels:
            assert SHA256.fullmatch(wheel.sha256), (entry.name, wheel.filename)
            assert wheel.size, (entry.name, wheel.filename)
            assert wheel.filename.endswith(".whl")
        for spec in entry.files:
            assert spec.sha256 is not None
            assert SHA256.fullmatch(spec.sha256), (entry.name, spec.path)
            assert spec.size, (entry.name, spec.path)


def test_url_entries_are_https_and_only_known_ones_unpinned() -> None:
    """URL sources are https on GitHub releases; the unpinned ones are exactly listed."""
    urls = {e.name: e for e in load_catalog().models.values() if isinstance(e.source, UrlSource)}
    assert urls
    unpinned = set()
    for name, entry in urls.items():
        source = entry.source
        assert isinstance(source, UrlSource)
        assert source.url.startswith("https://github.com/"), name
        check_url(source.url)
        if source.sha256 is None:
            unpinned.add(name)
        else:
            assert SHA256.fullmatch(source.sha256), name
    assert unpinned <= KNOWN_UNPINNED, f"new URL entries without a pinned sha256: {unpinned}"


def _unpin_demo_url(setup: Setup) -> None:
    raw = json.loads(setup.catalog_path.read_text())
    entry = next(m for m in raw["models"] if m["name"] == "demo-url")
    entry["source"]["sha256"] = entry["source"]["size"] = None
    for spec in entry["files"]:
        spec["sha256"] = spec["size"] = None
    setup.catalog_path.write_text(json.dumps(raw))


def test_unpinned_url_model_needs_consent_on_the_command_line(
    setup: Setup,
    tmp_path: Path,
) -> None:
    """Today's policy, as a user meets it: `models install` of an unpinned URL model is
    refused in one line with exit 2 (USAGE) before anything is fetched or written, and
    installs only with --allow-unpinned, which records the hashes it received."""
    _unpin_demo_url(setup)
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}
    models = tmp_path / "home" / "models"
    command = [sys.executable, "-m", "voxtray", "models", "install", "demo-url"]
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert "--allow-unpinned" in one_error_line(refused)
    assert not [r for r in setup.server.requests if r.path.endswith(".tar.gz")]
    assert not (models / "demo-url").exists()
    assert not models.exists() or not [p for p in models.rglob("*") if p.is_file()]

    trusted = subprocess.run(
        [*command, "--allow-unpinned", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trusted.returncode == ExitCode.OK, trusted.stderr
    manifest = json.loads((models / "demo-url" / "manifest.json").read_text())
    assert manifest["files"]["model.onnx"]["sha256"] == hashlib.sha256(WEIGHTS).hexdigest()


def test_unpinned_model_with_consent_is_trusted_on_first_use_only(
    setup: Setup,
    tmp_path: Path,
) -> None:
    """With consent, the first archive is installed and its hashes recorded (trust on first
    use); a changed archive is then refused even with consent, leaving the installed model
    as it was, and `verify` still vouches for it."""
    _unpin_demo_url(setup)
    store = ModelStore(tmp_path / "models", setup.catalog())
    first = store.install("demo-url", allow_unpinned=True)
    assert (first.path / "model.onnx").read_bytes() == WEIGHTS
    assert not store.needs_consent("demo-url")

    other = os.urandom(5000)
    setup.server.serve(
        "/releases/demo-url.tar.gz",
        make_tarball("demo-url-1", {"model.onnx": other, "tokens.txt": EXTRA}),
    )
    with pytest.raises(CorruptError, match="not what you trusted"):
        store.install("demo-url", force=True, allow_unpinned=True)
    assert (first.path / "model.onnx").read_bytes() == WEIGHTS
    assert store.verify("demo-url").ok


def test_damaged_unpinned_archive_is_fetched_again(setup: Setup, tmp_path: Path) -> None:
    """A server that once sent junk for an unpinned archive: the install fails as CORRUPT,
    and a retry must fetch the archive again rather than reuse the junk."""
    _unpin_demo_url(setup)
    good = setup.server.routes["/releases/demo-url.tar.gz"][0]
    setup.server.serve("/releases/demo-url.tar.gz", b"<html>rate limited</html>")
    store = ModelStore(tmp_path / "models", setup.catalog())
    with pytest.raises(CorruptError):
        store.install("demo-url", allow_unpinned=True)
    assert store.get("demo-url") is None
    setup.server.serve("/releases/demo-url.tar.gz", good)
    model = store.install("demo-url", force=True, allow_unpinned=True)
    assert (model.path / "model.onnx").read_bytes() == WEIGHTS


# --- 5: the control socket ----------------------------------------------------------------------


@pytest.fixture
def open_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A VOXTRAY_HOME another user could reach (pytest's own tmp root is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="voxtray-sec-"))
    base.chmod(0o755)
    monkeypatch.setenv("VOXTRAY_HOME", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_loose_socket_folder_is_made_private(open_home: Path) -> None:
    """A run/ folder left world-writable (another umask, another tool) is tightened."""
    (open_home / "run").mkdir(mode=0o777)
    (open_home / "run").chmod(0o777)
    server = ControlServer(lambda request: {"ok": True})
    assert server.start()
    try:
        assert stat.S_IMODE((open_home / "run").stat().st_mode) == 0o700
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
    finally:
        server.stop()


def _connect_as_nobody(path: Path) -> str:
    """Fork, drop to uid/gid 65534, send `status`; what happened, in one word."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, leave through os._exit only
        code = 99
        try:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            except OSError:
                code = 10
            else:
                try:
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                        client.settimeout(5)
                        client.connect(str(path))
                        client.sendall(b'{"cmd": "status"}\n')
                        code = 13 if client.recv(4096) else 12
                except PermissionError:
                    code = 11
                except (ConnectionResetError, BrokenPipeError):
                    code = 12
                except OSError:
                    code = 14
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    outcomes = {10: "no-setuid", 11: "permission-denied", 12: "hung-up", 13: "answered"}
    return outcomes.get(os.waitstatus_to_exitcode(status), "other")


@pytest.fixture
def served(open_home: Path) -> Iterator[tuple[ControlServer, list[dict[str, Any]]]]:
    if not hasattr(os, "fork") or os.getuid() != 0:
        pytest.skip("needs root to become another user (uid 65534)")
    calls: list[dict[str, Any]] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(request)
        return {"ok": True, "state": "ready"}

    server = ControlServer(handler)
    assert server.start()
    yield server, calls
    server.stop()


def test_other_user_is_stopped_by_the_private_folder(
    served: tuple[ControlServer, list[dict[str, Any]]],
) -> None:
    """uid 65534 cannot even reach the socket: its folder is 0700."""
    server, calls = served
    outcome = _connect_as_nobody(server.path)
    if outcome == "no-setuid":
        pytest.skip("setuid() is not permitted here")
    assert outcome == "permission-denied"
    assert calls == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux only")
def test_other_user_is_refused_by_the_server_even_through_open_permissions(
    served: tuple[ControlServer, list[dict[str, Any]]],
) -> None:
    """With the folder and socket opened up, the server still hangs up on another uid
    without running its command, and goes on serving its own user."""
    server, calls = served
    server.path.parent.chmod(0o755)
    server.path.chmod(0o666)
    outcome = _connect_as_nobody(server.path)
    if outcome == "no-setuid":
        pytest.skip("setuid() is not permitted here")
    assert outcome == "hung-up"
    assert calls == []
    assert send("status", path=server.path) == {"ok": True, "state": "ready"}
    assert calls == [{"cmd": "status"}]


# --- 6: no network at import or start -------------------------------------------------------------


@pytest.fixture
def network_log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records (and refuses) every connect and name look-up made in this process."""
    log: list[str] = []

    def refuse(kind: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            log.append(f"{kind} {args[1:] if kind != 'getaddrinfo' else args}")
            raise OSError(f"network access during the test: {kind}")

        return record

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    return log


def test_imports_and_cli_make_no_connection_in_process(
    network_log: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Import (if not imported yet) and run `--version` and `models list` in this process.
    Modules imported earlier in the session are covered by the fresh-interpreter test."""
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    monkeypatch.delenv("VOXTRAY_CATALOG", raising=False)
    cli = importlib.import_module("voxtray.cli.main")
    importlib.import_module("voxtray.ui.app")
    assert cli.main(["models", "list"]) == 0
    with pytest.raises(SystemExit) as version:
        cli.main(["--version"])
    assert version.value.code == 0
    assert "whisper-tiny.en" in capsys.readouterr().out
    assert network_log == []


SITECUSTOMIZE = """
import os, socket
_LOG = os.environ["VOXTRAY_NETLOG"]


def _record(kind, detail):
    with open(_LOG, "a", encoding="utf-8") as stream:
        stream.write(f"{kind} {detail!r}\\n")


def _wrap(owner, name):
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        _record(name, args[1:] if name.startswith("connect") else args)
        return real(*args, **kwargs)

    setattr(owner, name, wrapper)


_wrap(socket.socket, "connect")
_wrap(socket.socket, "connect_ex")
_wrap(socket, "getaddrinfo")
_record("armed", os.getpid())
"""


def _traced(tmp_path: Path, *args: str) -> list[str]:
    """Run `python *args` with the recording sitecustomize; the network calls it made."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / f"net-{len(list(tmp_path.glob('net-*')))}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
        "VOXTRAY_NETLOG": str(log),
        "VOXTRAY_HOME": str(tmp_path / "home"),
    }
    env.pop("VOXTRAY_CATALOG", None)
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("armed "), "the sitecustomize hook did not load"
    return [line for line in lines if not line.startswith("armed ")]


def test_recorder_sees_a_connection(tmp_path: Path) -> None:
    """The hook works: a plain connect to a closed loopback port is recorded."""
    probe = (
        "import socket, contextlib\n"
        "with contextlib.suppress(OSError), socket.socket() as s:\n"
        "    s.settimeout(1); s.connect(('127.0.0.1', 9))\n"
    )
    assert _traced(tmp_path, "-c", probe) == ["connect (('127.0.0.1', 9),)"]


@pytest.mark.parametrize(
    "args",
    [
        ("-c", "import voxtray.cli.main, voxtray.ui.app"),
        ("-m", "voxtray", "--version"),
        ("-m", "voxtray", "models", "list"),
        ("-m", "voxtray", "models", "list", "--json"),
    ],
    ids=["import", "version", "models-list", "models-list-json"],
)
def test_fresh_interpreter_makes_no_connection(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Start-up paths that must work offline and leak nothing: no connect, no DNS."""
    assert _traced(tmp_path, *args) == []
