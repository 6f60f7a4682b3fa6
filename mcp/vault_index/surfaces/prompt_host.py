"""A command file's text, rewritten to name only what exists where this server runs.

Trigger: with `claude mcp add` in another project, the handoff prompt told the agent to run
`.venv/bin/python scripts/handoff.py` (or the plugin's `${CLAUDE_PLUGIN_ROOT}` copy) and to pass
`${CLAUDE_SESSION_ID}`: that project has no such scripts, and only Claude Code's own slash
commands fill in the placeholder. Why: a prompt must name only things that exist where it runs.
Outcome: the script call becomes this installation's interpreter and script, by absolute path,
without the plugin alternative or the placeholder (the script then takes the project's newest
transcript); an installation without the scripts (a wheel) gets a step that needs no script.
The slash command files themselves stay as they are: in the clone and the plugin they work.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

SCRIPT_CALL = re.compile(r"\.venv/bin/python scripts/(?P<script>[a-z_]+\.py)")
PLUGIN_ALTERNATIVE = re.compile(r"\n *\(where this project has no `\.venv`.*?\)\.", re.S)
SESSION_ARGUMENT = " --session ${CLAUDE_SESSION_ID}"
HANDOFF_STEP = re.compile(r"1\. Create the note with the script.*?(?=\n2\. )", re.S)
PRINTED_CARD = "the card the script printed, updated if needed,"
PRINTED_NOTE = "Open the note it printed and fill in"


def scripts_dir() -> Path | None:
    """The scripts/ folder of this installation (a clone or the plugin), None for a wheel."""
    folder = Path(__file__).resolve().parents[3] / "scripts"  # surfaces -> vault_index -> mcp -> the checkout
    return folder if (folder / "_hooklib.py").is_file() else None


def runnable_here(text: str, folder: Path | None = None, content: Path | None = None) -> str:
    """`text` with its script calls made runnable here; text that names no script is unchanged.

    `folder` (default scripts_dir()) and `content` (default config.content_dir()) exist for tests.
    """
    if not SCRIPT_CALL.search(text):
        return text
    text = PLUGIN_ALTERNATIVE.sub("", text).replace(SESSION_ARGUMENT, "")
    folder = folder if folder is not None else scripts_dir()
    if folder is not None and all((folder / m["script"]).is_file() for m in SCRIPT_CALL.finditer(text)):
        python = shlex.quote(sys.executable)
        return SCRIPT_CALL.sub(lambda m: f"{python} {shlex.quote(str(folder / m['script']))}", text)
    return _without_scripts(text, content)


def _without_scripts(text: str, content: Path | None) -> str:
    """The handoff steps for an installation that has no handoff script: the agent writes the note."""
    if content is None:
        from vault_index.config import content_dir

        content = content_dir()
    where = content / "docs" / "handoffs"
    step = (f"1. Create the note yourself (this installation has no handoff script): "
            f"`{where}/YYYY-MM-DD-<topic>.md`, with `-2`, `-3` added when the name is taken (never replace\n"
            "   a note). Give it frontmatter `title`, `date`, `type: handoff`, and the sections Goal, State,\n"
            "   Next steps, Recent requests (the person's last requests, in order) and Touched files (paths).")
    text = HANDOFF_STEP.sub(lambda _m: step, text).replace(PRINTED_NOTE, "Fill in")
    return text.replace(PRINTED_CARD, "a card of two sentences that names the note and its first next step,")
