"""The project of a working directory: its git repository (its main checkout, or a bare
repository's directory: see :mod:`memoryd_client.project`, where :func:`project_of` and
:func:`repository_of` are defined once with the clients); outside git, the directory itself.

An entry belongs to a project only when it was written inside a git repository
(``repository_of``); written anywhere else it is global, and the memory block shows it in every
project. A watched file belongs to its project root's project (memoryd.ingest.file_projects),
or, for Claude Code's auto memory, to that of the directory its name encodes
(memoryd.claude_projects)."""

from __future__ import annotations

from memoryd_client.project import checkout_of, project_of, repository_of

__all__ = ["checkout_of", "project_of", "repository_of"]
