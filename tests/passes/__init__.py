"""Tests of the maintenance passes (`passes/`): runs, their run log and undo, the user's files they
rewrite, scope moves, staleness, retention."""
