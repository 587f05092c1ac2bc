"""Tests of sessions (`sessions/`): the memory block, the tool-call lessons, extraction at session
end, outcomes and usage, history import."""
