"""Tests of the model and its work (`embedding/`): vectors, the queue, named models, the lexicon."""
