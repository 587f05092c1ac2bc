"""Text normalisation and content hashes.

Two texts that differ only in case and white space are the same memory: they share a
normalised form and so a content hash. The hash keys exact-duplicate detection and the
embedding cache (identical text is never embedded twice).
"""

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
_KEBAB_DROP = re.compile(r"['\u2019]")
_KEBAB_SPLIT = re.compile(r"[\W_]+")


def normalise_text(text: str) -> str:
    """Unicode NFKC, lower case, white space collapsed, trimmed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def content_hash(text: str) -> str:
    """sha256 hex digest of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def kebab(heading: str) -> str:
    """Lower-case kebab form: ``Tool Quirks & Gotchas`` -> ``tool-quirks-gotchas``."""
    words = _KEBAB_DROP.sub("", heading.lower())
    return _KEBAB_SPLIT.sub("-", words).strip("-")
