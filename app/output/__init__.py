"""Text delivery: type or paste the recognised words into the focused window (no Qt here)."""

from app.output.base import DeliveryError, TextOutput
from app.output.chooser import OUTPUT_CHOICES, choose_output, create_output, describe_outputs

__all__ = [
    "OUTPUT_CHOICES",
    "DeliveryError",
    "TextOutput",
    "choose_output",
    "create_output",
    "describe_outputs",
]
