"""The one outcome shape, `{status, message, path, version, data}`, as plain JSON values.

The MCP tools wrap it in `OutcomeOut` (surfaces/shapes.py, pydantic); the CLI prints it as it is,
so a terminal write does not load pydantic and every output model (about 190 ms a command).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def absolute(root, path: str) -> str:
    """A note's path as every tool answers it (issue 39): absolute, whatever form the vault keeps."""
    return str(Path(root) / path) if path and not Path(path).is_absolute() else path


def is_outcome(value) -> bool:
    return hasattr(value, "ok") and not hasattr(value, "body")


def outcome_dict(outcome, writer=None) -> dict:
    """A write service outcome (or a curation result dict) as the outcome shape; with the `writer`
    that wrote, its per-stage times in milliseconds (`data.timings`, for the bench)."""
    if isinstance(outcome, dict):
        return {"status": outcome["status"], "message": outcome["message"], "path": outcome.get("path", ""),
                "version": outcome.get("version"), "data": dict(outcome.get("data") or {})}
    data = {"problems": list(outcome.problems), "notices": list(outcome.notices), "commit": outcome.commit}
    if outcome.result:
        data["result"] = outcome.result
    stages = getattr(getattr(writer, "last_times", None), "stages", None)
    if stages and outcome.status == "written":
        data["timings"] = {name: round(seconds * 1000, 3) for name, seconds in stages.items()}
    return {"status": outcome.status, "message": outcome.message, "path": outcome.path, "version": outcome.version,
            "data": jsonable(data)}


def jsonable(value):
    """Dates and tuples from frontmatter as JSON values (structured output must serialise)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
