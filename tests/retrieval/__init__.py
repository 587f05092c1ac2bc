"""Tests of search (`retrieval/`): filters, dates, the details a question asks for."""
