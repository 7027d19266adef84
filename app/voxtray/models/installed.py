"""An installed model as its manifest describes it: its files, variants and how it was built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxtray.errors import NotFoundError
from voxtray.models.versions import CONVERTER_VERSION

MANIFEST = "manifest.json"
INT8_EXACT = "int8_exact_everywhere"
"""Manifest key: the int8 variant's weights are within the reduced range (see
`voxtray.inference.cpu`)."""


@dataclass(frozen=True)
class InstalledModel:
    name: str
    path: Path
    manifest: dict[str, Any]

    @property
    def stale(self) -> bool:
        """Converted by an older converter: a reinstall brings the current graphs."""
        if (
            "converter_version" not in self.manifest
            and "ct2/model.bin" not in self.manifest["files"]
        ):
            return False
        return bool(self.manifest.get("converter_version") != CONVERTER_VERSION)

    @property
    def int8_exact_everywhere(self) -> bool:
        """Its int8 weights give exact products on every CPU (reduced range); unknown for
        models installed before this was recorded, which count as full range."""
        return bool(self.manifest.get(INT8_EXACT, False))

    def variant_files(self, precision: str) -> dict[str, Path]:
        variants: dict[str, dict[str, str]] = self.manifest["variants"]
        if precision not in variants:
            known = ", ".join(variants)
            raise NotFoundError(f"{self.name} has no {precision} variant (has {known})")
        return {role: self.path / rel for role, rel in variants[precision].items()}
