"""A BERT encoder in numpy, written from the architecture, not from coderecall's engine: the
reference that pooling is checked against (a model's token states, which the engine keeps
to itself)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


def _tensors(path: Path) -> dict[str, Array]:
    """The F32 tensors of a safetensors file: a length, a JSON header, then raw data."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
    return out


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: Array = (x - mean) / np.sqrt(var + eps) * weight + bias
    return out


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(x: Array) -> Array:
    out: Array = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float32))
    return out


def token_states(folder: Path, ids: list[int]) -> Array:
    """The last hidden state of each token of one unpadded input."""
    config = json.loads((folder / "config.json").read_text())
    w = _tensors(folder / "model.safetensors")
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)

    def dense(name: str, v: Array) -> Array:
        out: Array = v @ w[f"{name}.weight"].T + w[f"{name}.bias"]
        return out

    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            dense(f"{p}.attention.self.{part}", x).reshape(n, heads, -1).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        attended = dense(f"{p}.attention.output.dense", context.transpose(1, 0, 2).reshape(n, -1))
        x = _layer_norm(
            attended + x,
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        hidden = dense(f"{p}.output.dense", _gelu(dense(f"{p}.intermediate.dense", x)))
        x = _layer_norm(
            hidden + x, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps
        )
    return x.astype(np.float32)


def unit(v: Array) -> Array:
    out: Array = (v / np.linalg.norm(v)).astype(np.float32)
    return out
