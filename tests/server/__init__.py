"""Tests of the daemon as a server (`server/`, `cli.py`, `service.py`, `scheduling.py`,
`collector.py`): the wire, its limits and input errors, connections and their agents, the memory
tools, stopping, the service units."""
