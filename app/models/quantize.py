"""int8 variants of converted Whisper graphs: dynamic quantisation, and a decoder that
looks tokens up in its quantised output projection instead of a table of its own."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

LOOKUP_TABLE = "decoder.embeddings.fp16"
PROJECTION = "decoder.projection"


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of every MatMul with a constant weight."""
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
        )
    finally:
        logging.disable(logging.NOTSET)


def share_projection_rows(path: Path) -> bool:
    """Rewrite the int8 decoder at `path` to take each token's embedding from the
    quantised output projection, and drop its own lookup table.

    Whisper ties the two: the projection is the embedding table transposed, and its
    per-channel int8 quantisation keeps one scale per token, so a column times its scale
    is that token's embedding to within half a quantisation step. The float16 table was
    38 MiB of tiny.en's resident memory; the projection is held anyway. False (the file
    unchanged) when the graph lacks the table or the symmetric quantised projection.
    """
    model = onnx.load(str(path))
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    weight, scale = f"{PROJECTION}.weight_quantized", f"{PROJECTION}.weight_scale"
    zero_point = initializers.get(f"{PROJECTION}.weight_zero_point")
    lookups = [
        node for node in graph.node if node.op_type == "Gather" and node.input[0] == LOOKUP_TABLE
    ]
    if (
        len(lookups) != 1
        or weight not in initializers
        or scale not in initializers
        or zero_point is None
        or np.any(numpy_helper.to_array(zero_point))
    ):
        return False
    lookup = lookups[0]
    casts = [node for node in graph.node if list(node.input) == [lookup.output[0]]]
    if len(casts) != 1 or casts[0].op_type != "Cast":
        return False
    tokens, embedded = lookup.input[1], casts[0].output[0]
    columns = "embedding.columns"
    rows = "embedding.rows"
    scales = "embedding.scales"
    replacement = [
        helper.make_node("Gather", [weight, tokens], ["embedding.columns.int8"], axis=1),
        helper.make_node("Cast", ["embedding.columns.int8"], [columns], to=onnx.TensorProto.FLOAT),
        # [state, n_audio, n_tokens] -> [n_audio, n_tokens, state]
        helper.make_node("Transpose", [columns], [rows], perm=[1, 2, 0]),
        helper.make_node("Gather", [scale, tokens], ["embedding.token_scales"]),
        helper.make_node("Unsqueeze", ["embedding.token_scales", "embedding.last_axis"], [scales]),
        helper.make_node("Mul", [rows, scales], [embedded]),
    ]
    at = list(graph.node).index(lookup)
    kept = [node for node in graph.node if node is not lookup and node is not casts[0]]
    del graph.node[:]
    graph.node.extend(kept[:at] + replacement + kept[at:])
    graph.initializer.remove(initializers[LOOKUP_TABLE])
    graph.initializer.append(
        numpy_helper.from_array(np.array([-1], np.int64), "embedding.last_axis")
    )
    onnx.checker.check_model(model)
    onnx.save_model(model, str(path))
    return True
