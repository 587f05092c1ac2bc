"""The model and the work around it: loading it (``model``), the threads it runs on and their
queue (``threads``, ``queue``), what it derives from the entries and keeps up to date in the
background (the vector index and the vector backlog: ``vectors``; the lexicon of words:
``words``), and the script that derives a named model (``derive``).

It sits below the stages that use vectors (ingest, retrieval, the passes, the sessions) and
above the store: each class here is handed the store's parts, its settings and the threads it
needs, never the daemon.
"""
