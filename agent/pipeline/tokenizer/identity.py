"""Which tokenizer a response's ids belong to: a short digest of its vocabulary.

Ids mean nothing without the vocabulary that made them: a dataset whose later answers came from a
run with another tokenizer (another model's folder, a changed --tokenizer) reads as valid ids,
decodes to some text, and its round trip passes, since the export decodes and encodes with one
tokenizer. The runner stamps every response line with its tokenizer's digest (STAMP); the export
leaves out every answer stamped with another, and says how many. The digest covers every
token and its id, added tokens included, so two folders of one model agree and any change of an
id does not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

STAMP = "tokenizer_sha256"
"""The response line's (and runner.json's) field holding the digest."""
DIGEST_CHARS = 16


def vocabulary_digest(vocab: Mapping[str, int]) -> str:
    """16 hex digits of SHA-256 over the (token, id) pairs, sorted by id then token."""
    pairs = sorted(((int(i), str(token)) for token, i in vocab.items()))
    text = json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def tokenizer_digest(tokenizer: Any) -> str:
    """The digest of a loaded transformers tokenizer's vocabulary."""
    return vocabulary_digest(tokenizer.get_vocab())


def stamp_of(fields: Mapping[str, Any]) -> str | None:
    """The digest a response line carries, or None (an older runner's line, or no tokenizer)."""
    value = fields.get(STAMP)
    return value if isinstance(value, str) and value else None
