"""Build the GPU kit here and print the call plan that carries it to a lent GPU machine.

    packaging/gpu/prepare [--models whisper-tiny.en] [--store DIR] [--eval DIR]

Fetches the cp312 manylinux wheels the GPU run needs (onnxruntime-gpu at the version this
project resolves, the small pure dependencies of selftest, bench and serve) and builds
voxtray's own wheel from this checkout; takes the models' CTranslate2 sources from the
local model store (device-run converts them there with voxtray's own converter, which
writes the same fp32 and int8 files: 75 MB carried instead of 233 MB for tiny.en), the
VAD and the evaluation clips; packs it all as one tar.xz split into parts under
packaging/gpu/parts/ (git-ignored), and prints the calls, their bytes and the device time
they should take. Every call also sends the checkout, so the parts are cut to what the
checkout leaves of 60 MiB; before any slow work, prepare measures the checkout as the
device runner sends it and stops (exit 4) when it leaves less than 16 MiB for a part.

Exit codes: 0 the plan fits the device time, 2 bad arguments, 3 built but the plan does
not fit the device time, 4 the checkout leaves no room for a part.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

from tools.gpu import kit

BUDGET_S = 15 * 60
REPLY_S = 20  # estimate: the last call's reply after the run


def _say(message: str) -> None:
    print(f"prepare: {message}", file=sys.stderr, flush=True)


def _run(command: list[str], **kwargs: object) -> None:
    _say(" ".join(command))
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def _installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pip_download(pip_python: str, specs: list[str], folder: Path) -> None:
    platforms = [arg for p in kit.WHEEL_PLATFORMS for arg in ("--platform", p)]
    _run(
        [
            pip_python,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "--dest",
            str(folder),
            *specs,
        ]
    )


def _stored_wheel(source: Path, target: Path) -> None:
    """The same wheel with its members stored, not deflated: xz then packs the provider
    libraries far tighter (the CUDA provider: 231 MB deflated, 186 MB xz). Member names,
    order, dates and contents (and so RECORD's hashes) are unchanged."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.external_attr = info.external_attr
            copy.compress_type = zipfile.ZIP_STORED
            with zin.open(info) as member, zout.open(copy, "w", force_zip64=True) as out:
                shutil.copyfileobj(member, out, kit.MIB)


def fetch_wheels(args: argparse.Namespace, wheels: Path, cache: Path) -> dict[str, str]:
    """onnxruntime-gpu, the dependencies and voxtray's wheel into `wheels` (pip's own
    cache makes a second run quick)."""
    cache.mkdir(parents=True)
    ort_version = args.ort_version or _installed_version("onnxruntime-gpu")
    if not ort_version:
        raise SystemExit(
            "prepare: which onnxruntime-gpu? run with the project's interpreter "
            "(.venv/bin/python) or pass --ort-version"
        )
    specs = [f"onnxruntime-gpu=={ort_version}"]
    for name in kit.KIT_DEPS:
        version = _installed_version(name)
        specs.append(f"{name}=={version}" if version else name)
    _pip_download(args.pip_python, specs, cache)
    versions = {"onnxruntime-gpu": ort_version}
    for wheel in sorted(cache.glob("*.whl")):
        name = wheel.name.split("-")[0].lower().replace("_", "-")
        versions[name] = wheel.name.split("-")[1]
        if name == "onnxruntime-gpu":
            _say(f"re-storing {wheel.name} uncompressed so xz can pack it")
            _stored_wheel(wheel, wheels / wheel.name)
        else:
            shutil.copy2(wheel, wheels / wheel.name)
    built = cache / "voxtray"
    shutil.rmtree(built, ignore_errors=True)
    _run(
        [
            args.pip_python,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(built),
            str(kit.REPO),
        ]
    )
    for wheel in built.glob("voxtray-*.whl"):
        shutil.copy2(wheel, wheels / wheel.name)
        versions["voxtray"] = wheel.name.split("-")[1]
    return versions


def _default_store() -> Path:
    home = os.environ.get("VOXTRAY_TEST_HOME") or str(Path.home() / ".cache" / "voxtray-test")
    return Path(home) / "models"


def take_models(store: Path, names: list[str], kit_root: Path) -> dict[str, object]:
    """Each Whisper model's CTranslate2 source and its manifest (the ONNX files' sizes and
    sha256 as converted here, so `voxtray models verify` there proves the conversion gave
    the same bytes); the VAD as installed."""
    taken: dict[str, object] = {}
    for name in names:
        folder = store / name
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        files = {rel: v for rel, v in manifest["files"].items() if not rel.startswith("ct2/")}
        if manifest.get("family") == "whisper":
            ct2 = folder / "ct2"
            target = kit_root / "sources" / name
            target.mkdir(parents=True)
            for rel in ("model.bin", "config.json", "vocabulary.txt"):
                shutil.copy2(ct2 / rel, target / rel)
            prefix = manifest["variants"]["fp32"]["encoder"].removesuffix("-encoder.onnx")
            taken[name] = {"convert": True, "prefix": prefix, "files": files}
        else:
            target = kit_root / "models" / name
            target.mkdir(parents=True)
            for rel in files:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / rel, target / rel)
            taken[name] = {"convert": False, "files": files}
        trimmed = {**manifest, "files": files}
        (kit_root / "manifests").mkdir(exist_ok=True)
        kit.write_json(kit_root / "manifests" / f"{name}.json", trimmed)
    return taken


def take_eval(source: Path, target: Path, clips: int | None) -> int:
    lines = (source / "manifest.tsv").read_text(encoding="utf-8").splitlines()
    rows = lines[1:] if clips is None else lines[1 : clips + 1]
    (target / "wav").mkdir(parents=True)
    for row in rows:
        shutil.copy2(source / row.split("\t")[1], target / row.split("\t")[1])
    (target / "manifest.tsv").write_text("\n".join([lines[0], *rows]) + "\n", encoding="utf-8")
    return len(rows)


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(kit.REPO), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def pack(kit_root: Path, target: Path, preset: str) -> None:
    """One tar, compressed by xz (threaded where the xz program is here)."""
    plain = target.with_suffix("")
    with tarfile.open(plain, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(kit_root, arcname="kit")
    xz = shutil.which("xz")
    if xz:
        _run([xz, "-T0", f"-{preset}", "--force", "--keep", str(plain)])
    else:
        import lzma

        level = int(preset.rstrip("e")) | (lzma.PRESET_EXTREME if preset.endswith("e") else 0)
        with plain.open("rb") as source, lzma.open(target, "wb", preset=level) as out:
            shutil.copyfileobj(source, out, kit.MIB)
    plain.unlink()


def split(packed: Path, parts: Path, part_bytes: int) -> list[Path]:
    written = []
    with packed.open("rb") as stream:
        index = 1
        while block := stream.read(part_bytes):
            path = parts / kit.part_name(index)
            path.write_bytes(block)
            written.append(path)
            index += 1
    return written


def plan(
    part_sizes: list[int],
    sums_bytes: int,
    tree_bytes: int,
    parts: Path,
    args: argparse.Namespace,
) -> dict[str, object]:
    """The calls, in order, with the bytes each sends (part, SHA256SUMS and the checkout)
    and the device seconds each should take. The last call's run gets what the device time
    leaves after the start, the stash calls and the time kept back, up to --run-s."""
    rel = parts.relative_to(kit.REPO).as_posix()
    script = f"bash {kit.ENTRY.relative_to(kit.REPO).as_posix()}/device-run"
    where = "" if parts == kit.PARTS else f" --parts {rel}"
    sent = [size + sums_bytes + tree_bytes for size in part_sizes]
    transfer = [round(size / (args.mb_per_s * 1e6)) for size in sent]
    seconds = [t + args.call_s for t in transfer[:-1]]
    left = BUDGET_S - args.slack_s - args.start_s - sum(seconds) - transfer[-1] - REPLY_S
    run_s = min(args.run_s, left)
    seconds.append(transfer[-1] + run_s + REPLY_S)
    calls: list[dict[str, object]] = []
    for index, (size, estimated) in enumerate(zip(sent, seconds, strict=True), 1):
        if index == len(sent):
            command = f"{script} run{where} --budget-s {run_s}"
        else:
            command = f"{script} stash{where}" + (" --probe" if index == 1 else "")
        calls.append(
            {
                "call": index,
                "carry": [f"{rel}/{kit.part_name(index)}", f"{rel}/{kit.SUMS}"],
                "command": command,
                "timeout_s": min(600, run_s + 120) if index == len(sent) else 120,
                "bytes": size,
                "estimated_s": estimated,
            }
        )
    used = args.start_s + sum(seconds)
    return {
        "kit_bytes": sum(part_sizes),
        "tree_bytes": tree_bytes,
        "sums_bytes": sums_bytes,
        "call_budget": kit.CALL_BUDGET,
        "calls": calls,
        "estimate": {
            "start_s": args.start_s,
            "calls_s": used - args.start_s,
            "total_s": used,
            "slack_s": BUDGET_S - used,
            "kept_back_s": args.slack_s,
            "run_s": run_s,
            "fits": run_s >= args.min_run_s,
            "assumed": f"{args.mb_per_s} MB/s transfer, {args.call_s} s per stash call "
            f"(command, reply, next call), device-run's budget what is left up to "
            f"{args.run_s} s, at least {args.min_run_s} s",
        },
    }


def part_bytes_for(checkout: list[kit.TreeFile], cap_mib: float | None) -> int | str:
    """The part size this checkout leaves room for, or why there is none."""
    sent = kit.tree_bytes(checkout)
    room = kit.part_room(sent)
    if room < kit.MIN_PART:
        return (
            f"prepare: every call sends this checkout's {sent:,} bytes, which leaves "
            f"{max(room, 0) / kit.MIB:.1f} MiB of the {kit.CALL_BUDGET // kit.MIB} MiB a call "
            f"may send for a part (at least {kit.MIN_PART // kit.MIB} MiB needed); "
            f"the biggest files that travel: {kit.biggest(checkout)}"
        )
    return room if cap_mib is None else min(room, int(cap_mib * kit.MIB))


def check_parts_folder(parts: Path) -> str | None:
    """The parts must travel as carried paths only: inside the checkout, and ignored."""
    try:
        rel = parts.relative_to(kit.REPO).as_posix()
    except ValueError:
        return f"--parts {parts}: must be inside the checkout {kit.REPO}, as carried paths are"
    ignored = subprocess.run(
        ["git", "-C", str(kit.REPO), "check-ignore", "-q", f"{rel}/{kit.SUMS}"], check=False
    )
    if ignored.returncode != 0:
        return f"--parts {rel}: git does not ignore it, so every call would send every part"
    return None


def print_plan(data: dict[str, object]) -> None:
    calls: list[dict[str, object]] = data["calls"]  # type: ignore[assignment]
    estimate: dict[str, object] = data["estimate"]  # type: ignore[assignment]
    print(
        f"kit: {data['kit_bytes']:,} bytes in {len(calls)} parts; each call also sends "
        f"SHA256SUMS ({data['sums_bytes']:,} bytes) and the checkout "
        f"({data['tree_bytes']:,} bytes), at most {kit.CALL_BUDGET:,} bytes (60 MiB) a call"
    )
    print("calls, one right after the other (the machine stays only 30 s after a call):")
    for call in calls:
        print(
            f"  {call['call']}. carry={json.dumps(call['carry'])} "
            f"command={json.dumps(call['command'])} timeout_s={call['timeout_s']}  "
            f"[{call['bytes']:,} bytes, ~{call['estimated_s']} s]"
        )
    print("  then give the machine back at once")
    print(
        f"device time: start ~{estimate['start_s']} s + calls ~{estimate['calls_s']} s = "
        f"~{estimate['total_s']} s of {BUDGET_S}; slack {estimate['slack_s']} s, "
        f"{estimate['kept_back_s']} s kept back; the run gets {estimate['run_s']} s: "
        f"{'fits' if estimate['fits'] else 'DOES NOT FIT'}; assumed {estimate['assumed']}"
    )


def note_untracked(checkout: list[kit.TreeFile]) -> str | None:
    """Untracked files travel with every call too, where they are easily forgotten."""
    untracked = [entry for entry in checkout if not entry.tracked]
    sent = kit.tree_bytes(untracked)
    if sent < kit.MIB:
        return None
    return (
        f"note: {sent:,} bytes of untracked files travel with every call "
        f"({kit.biggest(untracked)}): git-ignore or move them to give the parts more room"
    )


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default="whisper-tiny.en", help="comma-separated Whisper models"
    )
    parser.add_argument("--vad", default="silero-vad-v6")
    parser.add_argument("--store", type=Path, default=_default_store(), help="the model store")
    parser.add_argument("--eval", type=Path, default=kit.REPO / "tests" / "data" / "speech")
    parser.add_argument("--clips", type=int, default=None, help="only the first N clips")
    parser.add_argument("--ort-version", default=None)
    parser.add_argument("--pip-python", default=sys.executable, help="runs pip download/wheel")
    parser.add_argument("--parts", type=Path, default=kit.PARTS)
    parser.add_argument(
        "--part-mib",
        type=float,
        default=None,
        help="at most this many MiB a part (default: what 60 MiB leaves after the checkout)",
    )
    parser.add_argument("--xz-preset", default="9e", help="xz level: 9e packs best, 0 is fast")
    parser.add_argument("--start-s", type=int, default=120, help="estimate: a machine's start")
    parser.add_argument("--call-s", type=int, default=15, help="estimate: one stash call")
    parser.add_argument("--run-s", type=int, default=420, help="device-run's budget, at most")
    parser.add_argument("--min-run-s", type=int, default=360, help="device-run's budget, at least")
    parser.add_argument("--mb-per-s", type=float, default=4.0, help="estimate: upload rate")
    parser.add_argument("--slack-s", type=int, default=180, help="device time kept back")
    args = parser.parse_args(argv)
    if args.part_mib is not None and not 1 <= args.part_mib * kit.MIB <= kit.PART_LIMIT:
        parser.error("--part-mib: from 1 to 60")
    args.parts = args.parts.resolve()
    problem = check_parts_folder(args.parts)
    if problem:
        parser.error(problem)
    return args


def _write_sums(packed: Path, written: list[Path], parts: Path) -> int:
    lines = [f"# kit {kit.sha256(packed)} {packed.stat().st_size} {len(written)}"]
    lines += [f"{kit.sha256(p)}  {p.name}" for p in written]
    sums = parts / kit.SUMS
    sums.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sums.stat().st_size


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    part_bytes = part_bytes_for(kit.tree_files(), args.part_mib)
    if isinstance(part_bytes, str):  # checked before any slow work
        print(part_bytes, file=sys.stderr)
        return 4
    began = time.monotonic()
    parts: Path = args.parts
    build = parts / "build"
    shutil.rmtree(build, ignore_errors=True)
    for old in parts.glob(f"{kit.PART_PREFIX}*"):
        old.unlink()
    kit_root = build / "kit"
    wheels = kit_root / "wheels"
    wheels.mkdir(parents=True)
    versions = fetch_wheels(args, wheels, build / "download")
    names = [n for n in args.models.split(",") if n]
    models = take_models(args.store, [*names, args.vad], kit_root)
    clips = take_eval(args.eval, kit_root / "eval", args.clips)
    info = {
        "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "versions": versions,
        "wheels": sorted(p.name for p in wheels.iterdir()),
        "whisper_models": names,
        "vad": args.vad,
        "models": models,
        "clips": clips,
    }
    kit.write_json(kit_root / "KIT.json", info)
    packed = build / kit.KIT_NAME
    _say(f"packing with xz -{args.xz_preset}")
    pack(kit_root, packed, args.xz_preset)
    written = split(packed, parts, part_bytes)
    sums_bytes = _write_sums(packed, written, parts)
    shutil.rmtree(build)
    checkout = kit.tree_files()  # again: the checkout may have changed while xz ran
    sizes = [p.stat().st_size for p in written]
    data = plan(sizes, sums_bytes, kit.tree_bytes(checkout), parts, args)
    data["kit"] = info
    data["part_bytes"] = part_bytes
    data["prepare_s"] = round(time.monotonic() - began, 1)
    kit.write_json(parts / "plan.json", data)
    print_plan(data)
    note = note_untracked(checkout)
    if note:
        print(note)
    print(f"prepared in {data['prepare_s']} s; the plan is also in {parts / 'plan.json'}")
    over = [c for c in data["calls"] if c["bytes"] > kit.CALL_BUDGET]  # type: ignore[attr-defined]
    if over:
        print(
            f"prepare: call {over[0]['call']} would send {over[0]['bytes']:,} bytes, over "
            f"60 MiB: the checkout grew while the kit was built; the biggest files that "
            f"travel: {kit.biggest(checkout)}",
            file=sys.stderr,
        )
        return 4
    return 0 if data["estimate"]["fits"] else 3  # type: ignore[index]


if __name__ == "__main__":
    raise SystemExit(main())
