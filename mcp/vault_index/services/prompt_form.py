"""Whether a prompt is about the code in front of the agent rather than a question to the notes.

Trigger: the prompt hook injected a note for 7% of unrelated prompts on developer docs (the Rust
book, the HTTPX docs; issue 37), and most of those were pasted output (a traceback, a failing test
run), a file path, a compiler error, "this function", or an instruction to change or run code. The
confidence cannot see that: a Rust panic does share its rare words with the book's chapter on panics.
Outcome: the hook stays silent for such a prompt before searching (services/prompt_recall.select);
search_notes and /recall are untouched, since an agent's query naming a file is a fair question.
Measured in docs/adr/0037-prompt-form.md (what it stops, and the few questions it also stops).
"""

from __future__ import annotations

import re

# a file name by its extension, `name.ext:LINE`, or a path of two folders or more
_EXT = (r"py|pyi|rs|ts|tsx|js|jsx|mjs|cjs|go|java|kt|rb|c|cc|cpp|h|hpp|cs|php|swift|json|ya?ml|toml|sql|sh"
        r"|css|scss|html|vue|lock|cfg|ini|xml|gradle|env|txt|log")
_PATH = re.compile(rf"(?<![\w/])[\w./-]+\.(?:{_EXT})\b|\b\w+\.\w+:\d+|(?:^|\s)\.?/[\w.-]+/[\w./-]+")
# what compilers, test runners and interpreters print
_ERROR = re.compile(r"Traceback \(most|panicked at|error\[E\d+\]|\b\w*(?:Error|Exception):|\bFAILED\b|npm ERR!"
                    r"|^fatal:|\bTS\d{4}\b")
# "this function", "these tests", "that error", or a question ending in "here"
_NOUN = (r"(?:function|func|fn|method|variable|var|test|spec|file|code|error|exception|warning|bug|class|type"
         r"|interface|component|endpoint|query|line|loop|module|script|snippet|call|struct|trait|enum|impl|hook"
         r"|handler|regex|branch|commit|diff|build|job|step|output|stack ?trace|traceback|log|migration|column"
         r"|table|field|param|parameter|argument|import|dependency|config|route|selector|macro|closure|lambda)s?")
_DEICTIC = re.compile(rf"\b(?:this|these|that|those)\s+(?:\w+\s+)?{_NOUN}\b|\bhere\s*[?.!]?$", re.IGNORECASE)
# an instruction to change or run something (not "explain" or "show": those may ask the notes)
_VERB = (r"(?:add|change|replace|write|run|rerun|re-run|fix|rename|refactor|remove|delete|update|make|create"
         r"|implement|move|convert|bump|revert|commit|push|undo|split|extract|format|lint|install|wrap|drop"
         r"|clean|continue|keep|stop|retry|generate|merge|rebase|squash|debug|simplify|inline|port|rewrite"
         r"|deploy)")
_INSTRUCTION = re.compile(rf"\s*(?:please\s+|ok(?:ay)?,?\s+|now\s+|can you\s+|could you\s+)?{_VERB}\b",
                          re.IGNORECASE)


def at_hand(prompt: str) -> str:
    """Why `prompt` is about the code at hand ("pasted text", "a file path", "an error", "this
    code", "an instruction"), or "" when it may be a question to the notes."""
    text = prompt.strip()
    if sum(1 for line in text.splitlines() if line.strip()) >= 2:
        return "pasted text"
    for pattern, why in ((_PATH, "a file path"), (_ERROR, "an error"), (_DEICTIC, "this code")):
        if pattern.search(text):
            return why
    return "an instruction" if _INSTRUCTION.match(text) else ""
