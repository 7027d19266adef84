"""`voxtray serve`: the command's flags, model loading and the server's event loop.

voxtray serve [--host 127.0.0.1] [--port 8000] [--no-auth] [--tls-cert PEM --tls-key PEM]
              [--model NAME] [--engine ...] [--provider ...] [--precision ...]
              [--max-upload-mb 25] [--max-audio-s 600] [--max-sample-rate 48000] [--max-queue 8]
              [--body-timeout-s 30] [--min-upload-kb-s 1] [--max-client-uploads 4]
              [--header-timeout-s 10] [--max-client-connections 32] [--max-connections 256]
              [--wyoming-port PORT] [--wyoming-max-connections 16]
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voxtray.choices import Engine, Precision, Provider
from voxtray.cli.args import default_threads, thread_count
from voxtray.errors import ExitCode, NotFoundError, VoxtrayError

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands


def register(commands: Subcommands) -> None:
    """Add the `serve` command to the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="a transcription server: OpenAI-compatible HTTP API and Wyoming",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (0: any free port)")
    serve.add_argument(
        "--no-auth", action="store_true", help="no API key (only allowed on a loopback address)"
    )
    serve.add_argument("--tls-cert", default=None, metavar="PEM", help="serve HTTPS with this")
    serve.add_argument("--tls-key", default=None, metavar="PEM", help="the certificate's key")
    serve.add_argument("--model", default=None, help="catalog name (default: the default model)")
    serve.add_argument(
        "--engine", default=Engine.AUTO, choices=[Engine.AUTO, Engine.ORT, Engine.SHERPA]
    )
    serve.add_argument("--provider", default=Provider.AUTO, choices=Provider.values())
    serve.add_argument("--precision", default=Precision.AUTO, choices=Precision.values())
    serve.add_argument(
        "--threads",
        type=thread_count(),
        default=default_threads(),
        help="CPU threads for inference",
    )
    serve.add_argument("--language", default="en", help="language of multilingual models")
    serve.add_argument("--max-upload-mb", type=float, default=25.0, help="largest upload")
    serve.add_argument("--max-audio-s", type=float, default=600.0, help="longest audio")
    serve.add_argument(
        "--max-sample-rate", type=int, default=48000, help="highest sampling rate of an upload"
    )
    serve.add_argument("--max-queue", type=int, default=8, help="requests waiting; more get 503")
    serve.add_argument(
        "--body-timeout-s", type=float, default=30.0, help="time allowed to upload a request body"
    )
    serve.add_argument(
        "--min-upload-kb-s",
        type=float,
        default=1.0,
        help="slowest average upload rate kept after an upload's first 5 s (0: no minimum)",
    )
    serve.add_argument(
        "--max-client-uploads",
        type=int,
        default=4,
        help="uploads one client address (an IPv6 /64) may have in progress; more get 429",
    )
    serve.add_argument(
        "--request-timeout-s", type=float, default=300.0, help="time allowed from upload to result"
    )
    serve.add_argument(
        "--header-timeout-s",
        type=float,
        default=10.0,
        help="time allowed for a request's head; idle and slow connections are closed",
    )
    serve.add_argument(
        "--max-client-connections",
        type=int,
        default=32,
        help="connections one client address may hold; the oldest idle one makes room",
    )
    serve.add_argument(
        "--max-connections", type=int, default=256, help="connections from all clients"
    )
    serve.add_argument(
        "--wyoming-port",
        type=int,
        default=None,
        help="also serve Wyoming (Home Assistant) on this port",
    )
    serve.add_argument(
        "--wyoming-host",
        default="127.0.0.1",
        help="address for Wyoming, which has no authentication",
    )
    serve.add_argument(
        "--wyoming-max-connections", type=int, default=16, help="Wyoming clients at once"
    )
    serve.set_defaults(handler=run)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _say(message: str) -> None:
    print(f"voxtray serve: {message}", file=sys.stderr, flush=True)


def _bind(host: str, port: int, what: str) -> socket.socket:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise VoxtrayError(
            f"cannot listen for {what} on {host}:{port}: {exc.strerror or exc}", ExitCode.USAGE
        ) from None


def _check_args(args: argparse.Namespace) -> None:
    if args.no_auth and not _loopback(args.host):
        raise VoxtrayError(
            f"--no-auth is only allowed on a loopback address, not {args.host}", ExitCode.USAGE
        )
    if bool(args.tls_cert) != bool(args.tls_key):
        raise VoxtrayError("--tls-cert and --tls-key go together", ExitCode.USAGE)
    for path in filter(None, (args.tls_cert, args.tls_key)):
        if not Path(path).is_file():
            raise NotFoundError(f"{path}: no such file")
    counts = (
        args.max_queue,
        args.max_client_uploads,
        args.max_client_connections,
        args.max_connections,
        args.wyoming_max_connections,
    )
    sizes = (
        args.max_upload_mb,
        args.max_audio_s,
        args.header_timeout_s,
        args.max_sample_rate,
        args.body_timeout_s,
        args.request_timeout_s,
    )
    if min(counts) < 1 or not all(size > 0 for size in sizes):  # NaN is not > 0
        raise VoxtrayError("limits must be positive", ExitCode.USAGE)
    if not args.min_upload_kb_s >= 0:
        raise VoxtrayError("--min-upload-kb-s must be 0 or more", ExitCode.USAGE)


def _check_installed(wyoming: bool) -> None:
    import importlib.util

    wanted = ["starlette", "uvicorn", "multipart"] + (["wyoming"] if wyoming else [])
    missing = [name for name in wanted if importlib.util.find_spec(name) is None]
    if missing:
        raise NotFoundError(
            f"voxtray serve needs {', '.join(missing)}: pip install 'voxtray[serve]'"
        )


def run(args: argparse.Namespace) -> int:
    """Load the model, bind the sockets and serve until interrupted."""
    _check_args(args)
    _check_installed(args.wyoming_port is not None)
    from voxtray.cli.progress import StderrProgress
    from voxtray.memory import return_large_blocks
    from voxtray.serve.auth import load_or_create_token, token_path
    from voxtray.serve.loader import load_service

    http_sock = _bind(args.host, args.port, "HTTP")
    wyoming_sock = (
        _bind(args.wyoming_host, args.wyoming_port, "Wyoming")
        if args.wyoming_port is not None
        else None
    )
    token = None
    if not args.no_auth:
        token, fresh = load_or_create_token()
        if fresh:
            _say(f"new API key (shown once; kept in {token_path()}): {token}")
        else:
            _say(f"API key in {token_path()}")
    return_large_blocks()
    service, selftest = load_service(args, _say, StderrProgress)
    scheme = "https" if args.tls_cert else "http"
    port = http_sock.getsockname()[1]
    info = service.info
    _say(f"{info.model} ({info.engine}, {info.precision}) on {info.provider}: {info.device}")
    if wyoming_sock is not None:
        wport = wyoming_sock.getsockname()[1]
        _say(f"Wyoming on tcp://{args.wyoming_host}:{wport} (no authentication)")
    _say(f"listening on {scheme}://{args.host}:{port}")
    import asyncio  # with ssl, ~9 MB the tray (which builds this parser) never needs

    try:
        asyncio.run(_serve(args, service, selftest, token, http_sock, wyoming_sock))
    finally:
        service.close()
    return int(ExitCode.OK)


async def _serve(
    args: argparse.Namespace,
    service: Any,
    selftest: Any,
    token: str | None,
    http_sock: socket.socket,
    wyoming_sock: socket.socket | None,
) -> None:
    import uvicorn

    from voxtray.serve.guard import ConnectionGuard, ConnectionLimits, guarded_protocol
    from voxtray.serve.http import Api, Limits
    from voxtray.serve.uploads import UploadLimits

    upload = UploadLimits(
        max_bytes=int(args.max_upload_mb * 2**20),
        timeout_s=args.body_timeout_s,
        per_client=args.max_client_uploads,
        min_bytes_per_s=args.min_upload_kb_s * 1000,
    )
    limits = Limits(upload=upload, request_timeout_s=args.request_timeout_s)
    app = Api(service, token, limits, selftest).app()
    guard = ConnectionGuard(
        ConnectionLimits(
            header_timeout_s=args.header_timeout_s,
            max_per_client=args.max_client_connections,
            max_total=args.max_connections,
        )
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ssl_certfile=args.tls_cert,
        ssl_keyfile=args.tls_key,
        http=guarded_protocol(guard),
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = uvicorn.Server(config)
    wyoming = None
    if wyoming_sock is not None:
        import asyncio

        from voxtray.serve.wyoming_server import WyomingLimits, serve_wyoming

        wyoming_limits = WyomingLimits(max_connections=args.wyoming_max_connections)
        wyoming = asyncio.get_running_loop().create_task(
            serve_wyoming(service, wyoming_sock, wyoming_limits)
        )
    try:
        await server.serve(sockets=[http_sock])
    finally:
        if wyoming is not None:
            wyoming.cancel()
