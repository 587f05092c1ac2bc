"""The embedder: real vectors from the shipped model."""

from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np
import pytest

from memoryd.config import load_config
from memoryd.embedding.model import (
    DEFAULT_MODEL_SHA256,
    LATE_CHUNKING,
    MAX_WINDOWS,
    POOLED_TOKENS,
    Embedder,
    file_sha256,
    locate_model,
)
from memoryd.errors import ConfigError, EmbedderError
from memoryd.settings import EmbedConfig
from memoryd.text import MAX_PARTS, part_spans, split_parts


def test_vectors_are_normalised_and_rank_meaning(embedder: Embedder) -> None:
    vectors = embedder.embed(["The cat sat on the mat", "A kitten is resting on a rug",
                              "Quarterly tax filing deadline"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > 0.4 > vectors[0] @ vectors[2] + 0.2


def test_batch_mates_move_a_vector_only_slightly(embedder: Embedder) -> None:
    # dynamic int8 scales activations over the whole padded batch: a vector depends a little
    # on its batch mates (never exactly equal), and embed_alone is the reproducible one
    texts = ["short", "a somewhat longer sentence about deployment workflows and releases"] * 20
    together = embedder.embed(texts)
    alone = embedder.embed_alone(texts[:2])
    assert (together[:2] * alone).sum(axis=1).min() > 0.98
    again = embedder.embed_alone(["a somewhat longer sentence about deployment workflows and "
                                  "releases", "short"])
    assert np.array_equal(again[::-1], alone)


def test_long_text_is_truncated_not_rejected(embedder: Embedder) -> None:
    vector = embedder.embed(["word " * 5000])
    assert vector.shape == (1, 384) and np.isfinite(vector).all()
    assert len(embedder.tokenizer.encode("word " * 5000).ids) == embedder.max_tokens


def test_default_model_is_the_pinned_file(embedder: Embedder) -> None:
    files = locate_model("default")
    assert file_sha256(files.model_path) == DEFAULT_MODEL_SHA256 == embedder.sha256
    assert embedder.model_id == "all-MiniLM-L6-v2-q8dyn"


def test_a_model_directory_can_be_configured(tmp_path, embedder: Embedder) -> None:
    files = locate_model("default")
    (tmp_path / "model.onnx").symlink_to(files.model_path)
    (tmp_path / "tokenizer.json").symlink_to(files.tokenizer_path)
    other = Embedder(EmbedConfig(str(tmp_path), 1, 8, 1024, 128))
    assert other.model_id == tmp_path.name and other.dim == 384
    assert float(other.embed(["hello world"])[0] @ embedder.embed(["hello world"])[0]) > 0.999


@pytest.mark.parametrize("setup, message", [
    (lambda d: None, "has no model.onnx"),
    (lambda d: ((d / "model.onnx").write_bytes(b"not onnx"), (d / "tokenizer.json").write_text("{}")),
     "cannot load"),
])
def test_a_broken_model_fails_loudly(tmp_path, setup, message) -> None:
    setup(tmp_path)
    with pytest.raises(EmbedderError, match=message):
        Embedder(EmbedConfig(str(tmp_path), 1, 8, 1024, 128))


EXCHANGE = ("[2026-10-14] User: The plotter tears tentacles thinner than 1.5 mm off the "
            "sticker sheet. Which blade should we order for the next batch?\n\n"
            "Assistant: Order the 45 degree blades from the usual supplier. The invoice goes to "
            "the accountant every Monday, so file it before the weekend.")


def test_an_unknown_way_of_making_sentence_vectors_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_PARTS", "late")
    with pytest.raises(ConfigError, match="embed.parts must be one of sentences, late-chunking"):
        load_config()


@pytest.fixture(scope="module")
def late() -> Embedder:
    """The embedder with ``[embed] parts = "late-chunking"``."""
    return Embedder(dataclasses.replace(load_config().embed, parts=LATE_CHUNKING))


def test_by_default_each_sentence_is_embedded_on_its_own(embedder: Embedder) -> None:
    """The default sentence vectors are the sentences' own (as a search for one of them
    embeds it), and the entry's vector the whole text's."""
    [(vector, parts)] = embedder.embed_entries([EXCHANGE])
    assert float(vector @ embedder.embed([EXCHANGE])[0]) > 0.99
    alone = embedder.embed_alone(split_parts(EXCHANGE))
    assert parts.shape == (4, 384) and (parts * alone).sum(axis=1).min() > 0.98


LONG_EXCHANGE = EXCHANGE + (
    " The plotter's firmware was updated on Tuesday and now cuts two sheets a minute. Keep the "
    "spare mats in the cupboard next to the printer, not on the shelf above the radiator. The "
    "supplier ships on Thursdays; an order placed after noon on Wednesday waits a week. Ask "
    "Dana before ordering more than fifty blades at once, she keeps the budget sheet.")


def test_the_backlog_gives_a_long_entry_the_mean_of_its_sentences(embedder: Embedder) -> None:
    """``embed_backlog``: an entry of POOLED_TOKENS or more that has sentences gets their
    vectors' mean as its own (its text is not run through the model a second time), and says
    so; a shorter one, or one of a single sentence, and any in ``embed_entries``, keeps the run
    over its whole text."""
    assert len(embedder.tokenizer.encode(LONG_EXCHANGE).ids) >= POOLED_TOKENS
    assert len(embedder.tokenizer.encode(EXCHANGE).ids) < POOLED_TOKENS
    one_sentence = " ".join(["word"] * 200)
    [(vector, parts), (short, _), _], pooled = embedder.embed_backlog(
        [LONG_EXCHANGE, EXCHANGE, one_sentence])
    assert pooled == [True, False, False]
    mean = parts.mean(axis=0)
    assert parts.shape == (len(split_parts(LONG_EXCHANGE)), 384)
    assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-6)
    whole = embedder.embed([LONG_EXCHANGE])[0]
    assert float(vector @ whole) < 0.97  # not the whole run's
    assert float(short @ embedder.embed([EXCHANGE])[0]) > 0.98  # batch mates move it a little
    [(unpooled, _)] = embedder.embed_entries([LONG_EXCHANGE])
    assert float(unpooled @ whole) > 0.98


def test_an_entry_and_its_sentences_come_from_one_run(embedder: Embedder,
                                                       late: Embedder) -> None:
    """Late chunking: the entry's vector is the one embed gives it (search and near-duplicate
    decisions do not move); each sentence's is pooled from the same run, so it saw the whole
    entry (nearer the entry than the sentence embedded on its own) and still tells the
    sentences apart: a search for one sentence finds that sentence's part first. (Not the
    converse, each part nearest its own sentence: a part that saw its neighbours can lie as
    near a neighbour's sentence, 0.524 against 0.512 for the last one here on an AVX2-only
    CPU, the other way round with AVX-512 VNNI.)"""
    [(vector, parts)] = late.embed_entries([EXCHANGE])
    sentences = split_parts(EXCHANGE)
    assert len(sentences) == 4 and parts.shape == (4, 384)
    assert np.allclose(vector, embedder.embed([EXCHANGE])[0], atol=1e-6)
    assert np.allclose(np.linalg.norm(parts, axis=1), 1.0, atol=1e-5)
    alone = embedder.embed_alone(sentences)
    assert list((parts @ alone.T).argmax(axis=0)) == [0, 1, 2, 3]
    assert float(np.mean(parts @ vector - alone @ vector)) > 0.1


#: Eight unlike topics, each a subject of four names and five things said of it.
TOPICS = [
    (["The deploy", "The release", "The rollout", "The hotfix"],
     ["needs a green pipeline", "waits for the canary", "goes out on Tuesdays",
      "is tagged in git", "skips the staging cluster"]),
    (["The cat", "The kitten", "Our tabby", "The old tomcat"],
     ["sleeps on the radiator", "chases the red laser dot", "hides under the sofa",
      "eats tuna at noon", "purrs on my lap"]),
    (["The invoice", "The receipt", "The tax form", "The bank statement"],
     ["is due by the fifteenth", "needs two signatures", "goes to the accountant",
      "lists every payment", "is filed in a binder"]),
    (["The soup", "The stew", "The risotto", "The curry"],
     ["needs more salt", "simmers for an hour", "uses fresh basil", "is served with bread",
      "tastes of garlic"]),
    (["The bicycle", "The tandem", "My road bike", "The mountain bike"],
     ["has a flat tyre", "needs new brake pads", "rides up the hill",
      "is locked at the station", "squeaks on every turn"]),
    (["The violin", "The cello", "The piano", "The flute"],
     ["is out of tune", "plays a minor scale", "sits in the practice room",
      "needs new strings", "sounds warm in the hall"]),
    (["The garden", "The greenhouse", "The orchard", "The allotment"],
     ["needs watering at dawn", "grows ripe tomatoes", "is full of weeds",
      "gets the morning sun", "has a compost heap"]),
    (["The telescope", "The observatory", "The star chart", "The comet"],
     ["points at Jupiter", "is clearest in winter", "shows the rings of Saturn",
      "needs a dark sky", "tracks the moon"]),
]


def test_the_text_past_the_truncation_keeps_its_sentence_vectors(embedder: Embedder,
                                                                  late: Embedder) -> None:
    """Late chunking: the whole text's vector sees its first max_tokens; its sentences further
    on are pooled from windows of their own, and those past the last window are embedded
    alone."""
    # Eight topics of twenty sentences: each part (a topic, ~650 characters) is unlike the
    # others, so that which part a sentence finds first says something on every CPU (parts
    # of one shared vocabulary lay within 0.01 of each other, and AVX-512 VNNI's rounding
    # put one sentence's part second).
    groups = []
    for subjects, predicates in TOPICS:
        group = [f"{s} {p}." for s, p in itertools.product(subjects, predicates)]
        random.Random(3).shuffle(group)
        groups.append(" ".join(group))
    long = " ".join(groups)  # ~1,200 tokens, 8 parts
    assert len(late.tokenizer.encode(long).overflowing) > MAX_WINDOWS - 1
    [(vector, parts)] = late.embed_entries([long])
    assert float(vector @ embedder.embed([long])[0]) > 0.98  # its windows are batch mates
    assert parts.shape == (MAX_PARTS, 384) and np.isfinite(parts).all()
    assert split_parts(long) == groups
    alone = embedder.embed_alone(groups)
    assert list((parts @ alone.T).argmax(axis=0)) == list(range(MAX_PARTS))  # as above
    together = (parts * alone).sum(axis=1)
    assert together[:4].max() < 0.97  # in a window: pooled there
    assert together[-1] > 0.98  # past the windows: on its own


@pytest.mark.parametrize("text", [
    EXCHANGE,
    "  [2026-03-01]   Use tabs.  Never spaces, not even in YAML files!\n",
    "- first bullet of the list, long enough\n- second bullet, long enough too\n1. third one",
    "Short. Tiny. Then a sentence long enough to stand alone. Ok.",
    " ".join(f"Sentence {i} is here and long enough." for i in range(19)),
    "One sentence only, however long it is and whatever it says",
])
def test_each_part_is_where_the_embedder_pools_it(text: str) -> None:
    """The embedder pools a part's tokens by its character span: the span must hold exactly
    the part's text (white space aside)."""
    spans = part_spans(text)
    assert [" ".join(text[start:end].split()) for start, end in spans] == split_parts(text)
    assert all(0 <= start < end <= len(text) for start, end in spans)
    assert spans == sorted(spans) and len(spans) <= MAX_PARTS
