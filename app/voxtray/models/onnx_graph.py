"""A small builder for ONNX graphs made of numpy weights, with the transformer pieces
Whisper needs (linear layers, layer norm, GELU, multi-head attention)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# IR 8 is the oldest that carries opset 17: readable by every onnxruntime we support,
# including the one bundled inside sherpa-onnx.
IR_VERSION = 8
_MASKED = -1e9


class GraphBuilder:
    """Collects nodes and initializers; each `op` call returns its output's name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._counter = 0

    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def weight(self, name: str, array: NDArray[Any]) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const_i64(self, values: Sequence[int]) -> str:
        return self.weight(self.fresh("const"), np.asarray(values, dtype=np.int64))

    def const_f32(self, value: float) -> str:
        return self.weight(self.fresh("const"), np.asarray(value, dtype=np.float32))

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        return self.op_n(op_type, inputs, 1, **attrs)[0]

    def op_n(self, op_type: str, inputs: Sequence[str], n_out: int, **attrs: Any) -> list[str]:
        outputs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        node = helper.make_node(op_type, list(inputs), outputs, name=self.fresh(op_type), **attrs)
        self.nodes.append(node)
        return outputs

    def add_input(self, name: str, elem_type: int, shape: Sequence[int | str]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def add_output(
        self, source: str, name: str, elem_type: int, shape: Sequence[int | str]
    ) -> None:
        self.nodes.append(helper.make_node("Identity", [source], [name], name=f"out_{name}"))
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))

    def build(self, metadata: dict[str, str] | None = None) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs, self.outputs, self.initializers
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="voxtray",
            ir_version=IR_VERSION,
        )
        for key, value in (metadata or {}).items():
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        return model


class Transformer:
    """Transformer layers over a GraphBuilder; weights are float32 arrays in
    CTranslate2's orientation ([out_features, in_features])."""

    def __init__(self, builder: GraphBuilder, num_heads: int, state: int) -> None:
        self.b = builder
        self.num_heads = num_heads
        self.state = state
        self.head_dim = state // num_heads

    def linear(self, x: str, name: str, weight: NDArray[Any], bias: NDArray[Any] | None) -> str:
        # Stored transposed so MatMul(x, W) needs no Transpose at run time, and so that
        # onnxruntime's dynamic quantisation finds a constant right-hand side.
        out = self.b.op("MatMul", x, self.b.weight(f"{name}.weight", weight.T))
        if bias is not None:
            out = self.b.op("Add", out, self.b.weight(f"{name}.bias", bias))
        return out

    def layer_norm(self, x: str, name: str, gamma: NDArray[Any], beta: NDArray[Any]) -> str:
        return self.b.op(
            "LayerNormalization",
            x,
            self.b.weight(f"{name}.gamma", gamma),
            self.b.weight(f"{name}.beta", beta),
            axis=-1,
            epsilon=1e-5,
        )

    def gelu(self, x: str) -> str:
        # Exact (erf) GELU as Whisper uses; onnxruntime fuses this pattern into one kernel.
        scaled = self.b.op("Mul", x, self.b.const_f32(1.0 / math.sqrt(2.0)))
        erf_plus_one = self.b.op("Add", self.b.op("Erf", scaled), self.b.const_f32(1.0))
        return self.b.op("Mul", self.b.op("Mul", x, erf_plus_one), self.b.const_f32(0.5))

    def split_heads(self, x: str, *, transpose_keys: bool = False) -> str:
        """[batch, time, state] -> [batch, heads, time, head_dim] (keys: [.., head_dim, time])."""
        shape = self.b.const_i64([0, 0, self.num_heads, self.head_dim])
        reshaped = self.b.op("Reshape", x, shape)
        perm = [0, 2, 3, 1] if transpose_keys else [0, 2, 1, 3]
        return self.b.op("Transpose", reshaped, perm=perm)

    def merge_heads(self, x: str) -> str:
        merged = self.b.op("Transpose", x, perm=[0, 2, 1, 3])
        return self.b.op("Reshape", merged, self.b.const_i64([0, 0, self.state]))

    def attention(self, q: str, k: str, v: str, mask: str | None = None) -> str:
        """Scaled dot-product attention over [batch, time, state] inputs."""
        scale = self.b.const_f32(1.0 / math.sqrt(self.head_dim))
        q_heads = self.b.op("Mul", self.split_heads(q), scale)
        scores = self.b.op("MatMul", q_heads, self.split_heads(k, transpose_keys=True))
        if mask is not None:
            scores = self.b.op("Add", scores, mask)
        probs = self.b.op("Softmax", scores, axis=-1)
        return self.merge_heads(self.b.op("MatMul", probs, self.split_heads(v)))

    def split_last(self, x: str, parts: int) -> list[str]:
        sizes = self.b.const_i64([self.state] * parts)
        return self.b.op_n("Split", [x, sizes], parts, axis=-1)

    def causal_mask(self, offset: str, end: str) -> str:
        """[n_new, end] additive mask: query at absolute position offset+i sees keys <= it."""
        zero = self.b.const_i64([0])
        one = self.b.const_i64([1])
        rows = self.b.op(
            "Range", _scalar(self.b, offset), _scalar(self.b, end), _scalar(self.b, one)
        )
        cols = self.b.op("Range", _scalar(self.b, zero), _scalar(self.b, end), _scalar(self.b, one))
        future = self.b.op(
            "Greater",
            self.b.op("Unsqueeze", cols, zero),
            self.b.op("Unsqueeze", rows, one),
        )
        return self.b.op("Where", future, self.b.const_f32(_MASKED), self.b.const_f32(0.0))


def _scalar(builder: GraphBuilder, one_element: str) -> str:
    return builder.op("Squeeze", one_element, builder.const_i64([0]))


FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
