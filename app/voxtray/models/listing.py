"""The catalog as a user chooses from it: one row per model, sorted, installed ones marked.

Shared by `voxtray models list` and the settings window, so both show the same facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from voxtray.choices import Precision, Provider
from voxtray.models.catalog import ModelEntry, PypiSource
from voxtray.models.store import ModelStore


@dataclass(frozen=True)
class ModelRow:
    name: str
    title: str
    family: str
    description: str
    languages: list[str]
    size_mb: float
    download_mb: float | None
    precisions: list[str]
    precision_cpu: Precision
    precision_cuda: Precision
    recommended_provider: Provider
    streaming: bool
    license: str
    source: str
    pinned: bool
    needs_consent: bool
    sha256_source: str
    default: bool
    installed: bool
    path: str | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def sort_key(entry: ModelEntry) -> tuple[bool, str]:
    """Speech-to-text models first, the voice activity detector last; by name within."""
    return entry.family == "silero-vad", entry.name


def model_rows(store: ModelStore) -> list[ModelRow]:
    """Every catalog model with what the store knows about it, in display order."""
    rows = []
    for entry in sorted(store.catalog.models.values(), key=sort_key):
        installed = store.get(entry.name)
        download = entry.download_bytes
        rows.append(
            ModelRow(
                name=entry.name,
                title=entry.title or entry.name,
                family=entry.family,
                description=entry.description,
                languages=list(entry.languages),
                size_mb=entry.size_mb,
                download_mb=round(download / 1e6, 1) if download else None,
                precisions=entry.precisions,
                precision_cpu=entry.recommended_precision(Provider.CPU),
                precision_cuda=entry.recommended_precision(Provider.CUDA),
                recommended_provider=entry.recommended_provider,
                streaming=entry.streaming,
                license=entry.license,
                source="pypi" if isinstance(entry.source, PypiSource) else "url",
                pinned=entry.pinned,
                needs_consent=store.needs_consent(entry.name),
                sha256_source=entry.sha256_source,
                default=entry.name in store.catalog.defaults,
                installed=installed is not None,
                path=str(installed.path) if installed else None,
            )
        )
    return rows


def languages_label(languages: list[str]) -> str:
    if languages in (["*"], ["multilingual"]):
        return "many"
    if len(languages) > 3:
        return f"{len(languages)} langs"
    return ",".join(languages)


def format_table(rows: list[ModelRow]) -> str:
    """Plain text for a terminal; `*` marks installed models, `!` unpinned downloads."""
    lines = []
    for row in rows:
        mark = "*" if row.installed else " "
        pin = " " if row.pinned else "!"
        extras = [f"{row.recommended_provider} {row.precision_cpu}/{row.precision_cuda}"]
        if row.streaming:
            extras.append("streaming")
        if row.default:
            extras.append("default")
        lines.append(
            f"{mark}{pin} {row.name:<31} {row.family:<16} {row.size_mb:>6.0f} MB  "
            f"{languages_label(row.languages):<9} {row.license:<10} {', '.join(extras)}"
        )
    return "\n".join(lines)


LEGEND = "* installed   ! no pinned sha256 (asks before downloading)   cpu/cuda precision"
