"""One memory on every machine, through git (docs/sync.md).

memoryd's durable state — the per-agent ledgers, the memory tools' directory, the transcript
archives and the memory tools' history — is a git repository whose worktree is the state dir
(never the database, the socket, the logs or the configuration). ``memory sync`` commits what
changed, fetches, merges and pushes, never with force:

- :mod:`memoryd.sync.merge`: the union of two ledgers (or two gzip archives), as git's merge
  driver for them (:mod:`memoryd.sync.driver`);
- :mod:`memoryd.sync.git`: the ``git`` program, run as a subprocess;
- :mod:`memoryd.sync.repo`: the repository — init, commit, fetch, merge with conflict copies,
  push, and putting back a sync that was killed;
- :mod:`memoryd.sync.apply`: what a merge brought, applied to the local index incrementally;
- :mod:`memoryd.sync.shared`: a team's shared repository, followed read-only.
"""
