"""Tests of the store (`store/`): the schema and its migrations, the ledgers, the vector index, the
memory tools' journal."""
