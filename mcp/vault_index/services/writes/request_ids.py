"""Request ids: a retry of the very same write gets the first answer; another write under the same id
gets `conflict`.

Trigger: a reused request id with different content answered "written" for a write that was not
made (issue 22). Why: an id stands for one request; answering a different one with the first's
outcome tells the agent its change landed when nothing was written.
Outcome: the digest of every field but the id is stored with the first outcome (in the request
log's JSON); a later request under that id with another digest is answered `conflict`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

DIGEST_KEY = "request_digest"


def digest(request) -> str:
    """sha256 of a WriteRequest's fields but its request_id, as canonical JSON."""
    fields = {k: v for k, v in asdict(request).items() if k != "request_id"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def conflict(request_id: str, path: str, first):
    """The `conflict` outcome for `path`: nothing was written, and why."""
    from vault_index.services.writes.write_types import WriteOutcome

    return WriteOutcome("conflict", path, f"request_id {request_id} already answered a different request "
                        f"({first.status} {first.path}); nothing was written. Give each write its own "
                        "request_id, and reuse one only to retry the very same request")
