"""Tests of the thin client (`client/memoryd_client`): the `memory` command, its hooks and their
installation, the MCP server, doctor, completion, the status views, the viewer, the OpenCode
plugin."""
