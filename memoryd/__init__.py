"""memoryd: a local memory daemon for AI agents."""

__version__ = "0.1.0"
