"""Tests of the maintenance passes (`passes/`): runs, their journal and undo, the user's files they
rewrite, scope moves, staleness, retention."""
