"""int8 variants of converted Whisper graphs (dynamic per-channel quantisation), and how
to tell whether a model's int8 weights are exact on every CPU (`voxtray.inference.cpu`)."""

from __future__ import annotations

import logging
from pathlib import Path

REDUCED_RANGE_LIMIT = 64
"""int8 weights within [-64, 63] (7 bits) never overflow the 16-bit sums of x86 CPUs
without VNNI."""


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of every MatMul with a constant weight, in 7 bits."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantiser logs advice about calibration pre-processing on the root logger;
    # it does not apply to dynamic quantisation and would reach the user's terminal.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            model_input=str(source),
            model_output=str(target),
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
            # One scale per output channel, as CTranslate2 does: per-tensor scales cost
            # tiny.en about a point of WER on the eval set.
            per_channel=True,
            # Full-range weights overflow on CPUs without VNNI: whisper-base then heard
            # French as Thai there. 7-bit weights give the same words on every CPU and
            # cost no measurable accuracy (docs/benchmarks.md, "int8 on every CPU").
            reduce_range=True,
        )
    finally:
        logging.disable(logging.NOTSET)


def int8_exact_on_every_cpu(paths: list[Path]) -> bool:
    """Every int8 weight in these ONNX files lies within the reduced range: exact on every
    CPU. Files with no int8 weights count as reduced."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    for path in paths:
        model = onnx.load(str(path))
        for tensor in model.graph.initializer:
            if tensor.data_type != TensorProto.INT8:
                continue
            weights = numpy_helper.to_array(tensor)
            if weights.size and int(np.abs(weights.astype(np.int16)).max()) > REDUCED_RANGE_LIMIT:
                return False
    return True
