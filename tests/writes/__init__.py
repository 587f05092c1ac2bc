"""Tests of the write path (`writes.py`, `redact.py`, `quarantine.py`): remember, duplicates and
corrections, redaction, the quarantine."""
