"""Operations over the whole store, above it: ``memoryd reindex`` (rebuild the index from the
files), ``memory purge`` (delete for good what a secret got into), and the replay of the
ledgers at start. They use the store's methods (and the model, for a reindex); the SQL stays
in :mod:`memoryd.store`."""
