"""Tests of purge, rebuild and replay (`maintenance/`)."""
