"""`voxtray models list|install|verify|remove|recommend`, and the store and installer the other
commands share (progress on stderr, results on stdout)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from voxtray.cli.args import setting_number
from voxtray.cli.guard import print_json
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.settings_schema import Key

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands
    from voxtray.inference.assembly import Installer
    from voxtray.models.store import InstalledModel, ModelStore


def register(commands: Subcommands) -> None:
    """`voxtray models list|install|verify|remove|recommend`."""
    models = commands.add_parser("models", help="list, install, verify and remove models")
    actions = models.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="the catalog, with what is installed")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_cmd_models_list)

    install = actions.add_parser("install", help="fetch, convert and verify models")
    install.add_argument("names", nargs="*", metavar="NAME")
    install.add_argument("--defaults", action="store_true", help="the default VAD and STT models")
    install.add_argument("--force", action="store_true", help="reinstall even if installed")
    install.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="accept a download the catalog pins no sha256 for (its hash is recorded)",
    )
    install.add_argument("--json", action="store_true", help="print JSON")
    install.set_defaults(handler=_cmd_models_install)

    verify = actions.add_parser("verify", help="check installed files against their sha256")
    verify.add_argument("names", nargs="*", metavar="NAME", help="default: every installed model")
    verify.add_argument("--json", action="store_true", help="print JSON")
    verify.set_defaults(handler=_cmd_models_verify)

    remove = actions.add_parser("remove", help="delete installed models")
    remove.add_argument("names", nargs="+", metavar="NAME")
    remove.add_argument("--json", action="store_true", help="print JSON")
    remove.set_defaults(handler=_cmd_models_remove)

    recommend = actions.add_parser(
        "recommend", help="measure installed models here and pick the best that is fast enough"
    )
    recommend.add_argument("names", nargs="*", metavar="NAME", help="default: every installed")
    recommend.add_argument(
        "--budget-ms",
        type=setting_number(Key.RECOMMEND_BUDGET_MS),
        default=None,
        help="release -> text budget for 5 s of speech, 50 to 10000 "
        "(default: the saved budget, 300 ms)",
    )
    recommend.add_argument("--remeasure", action="store_true", help="ignore kept results")
    recommend.add_argument("--json", action="store_true", help="print JSON")
    recommend.set_defaults(handler=_cmd_models_recommend)


def open_store() -> ModelStore:
    """The user's model store (VOXTRAY_HOME or the platform's data folder)."""
    from voxtray.models.catalog import load_catalog
    from voxtray.models.store import ModelStore
    from voxtray.paths import check_utf8_name, models_dir

    check_utf8_name(models_dir(), "the model store")
    return ModelStore(models_dir(), load_catalog())


def _cmd_models_list(args: argparse.Namespace) -> int:
    from voxtray.models.listing import LEGEND, format_table, model_rows

    rows = model_rows(open_store())
    if args.json:
        print_json({"models": [row.to_json() for row in rows]})
    else:
        print(format_table(rows))
        print(LEGEND, file=sys.stderr)
    return int(ExitCode.OK)


def _cmd_models_install(args: argparse.Namespace) -> int:
    store = open_store()
    names = list(args.names) + (store.catalog.defaults if args.defaults else [])
    if not names:
        raise VoxtrayError("name a model to install, or pass --defaults", ExitCode.USAGE)
    for name in names:
        store.catalog.get(name)
    results = [
        _install_one(store, name, force=args.force, allow_unpinned=args.allow_unpinned)
        for name in dict.fromkeys(names)
    ]
    if args.json:
        print_json({"results": results})
    return int(ExitCode.OK)


def _install_one(
    store: ModelStore, name: str, *, force: bool, allow_unpinned: bool = False
) -> dict[str, object]:
    existing = store.get(name)
    already = existing is not None and not existing.stale and not force
    model = _install(store, name, force=force, allow_unpinned=allow_unpinned, quiet=already)
    seconds = model.manifest.get("install_seconds")
    return {
        "name": name,
        "installed": True,
        "already_installed": already,
        "path": str(model.path),
        "install_seconds": seconds,
        "files": len(model.manifest["files"]),
    }


def _install(
    store: ModelStore, name: str, *, force: bool, allow_unpinned: bool = False, quiet: bool = False
) -> InstalledModel:
    from voxtray.cli.progress import StderrProgress

    if not quiet:
        print(f"installing {name}", file=sys.stderr)
    model = store.install(
        name, force=force, progress=StderrProgress(name), allow_unpinned=allow_unpinned
    )
    if not quiet:
        seconds = model.manifest.get("install_seconds")
        print(f"installed {name} in {seconds:.1f} s -> {model.path}", file=sys.stderr)
    return model


def installer(store: ModelStore) -> Installer:
    """Installs a missing model the way `voxtray models install` does, progress on stderr."""

    def install(name: str, force: bool) -> InstalledModel:
        return _install(store, name, force=force)

    return install


def _cmd_models_verify(args: argparse.Namespace) -> int:
    store = open_store()
    names = list(args.names) or [model.name for model in store.installed()]
    reports = [store.verify(name) for name in names]
    if args.json:
        print_json(
            {
                "results": [
                    {
                        "name": r.name,
                        "ok": r.ok,
                        "installed": r.installed,
                        "files_checked": r.files_checked,
                        "problems": [p.__dict__ for p in r.problems],
                    }
                    for r in reports
                ]
            }
        )
    else:
        from voxtray.cli.model_words import verify_line

        for report in reports:
            print(verify_line(report), file=sys.stdout if report.ok else sys.stderr)
    if any(not r.installed for r in reports):
        return int(ExitCode.NOT_FOUND)
    return int(ExitCode.OK if all(r.ok for r in reports) else ExitCode.CORRUPT)


def _cmd_models_remove(args: argparse.Namespace) -> int:
    store = open_store()
    results = [{"name": name, "removed": store.remove(name)} for name in args.names]
    if args.json:
        print_json({"results": results})
    else:
        for row in results:
            state = "removed" if row["removed"] else "was not installed"
            print(f"{row['name']}: {state}", file=sys.stderr)
    return int(ExitCode.OK)


def _cmd_models_recommend(args: argparse.Namespace) -> int:
    from voxtray.config import SettingsStore
    from voxtray.inference.engines import EngineChoice
    from voxtray.inference.measure import measure_all
    from voxtray.models.recommend import format_table, recommend

    store = open_store()
    speech = [m for m in store.installed() if m.manifest["family"] != "silero-vad"]
    models = [store.require(name) for name in args.names] if args.names else speech
    settings, warnings = SettingsStore().load()
    for warning in warnings:
        _say(f"voxtray: {warning}")
    measured = measure_all(models, EngineChoice.of(settings), force=args.remeasure, progress=_say)
    for note in measured.notes:
        _say(f"voxtray: {note}")
    budget = args.budget_ms if args.budget_ms is not None else settings.recommend_budget_ms
    installed = {m.name for m in store.installed()}
    result = recommend(measured.results, budget, store.catalog, installed)
    if args.json:
        print_json(result.to_json())
    else:
        print(format_table(result))
    return int(ExitCode.OK)


def _say(message: str) -> None:
    print(message, file=sys.stderr)
