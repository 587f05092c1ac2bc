"""Tests of sync through git (`sync/`)."""
