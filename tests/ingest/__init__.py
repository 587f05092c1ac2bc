"""Tests of ingestion (`ingest/`, `sources.py`): sources, the watcher, markdown files and
transcripts into entries, their counts."""
