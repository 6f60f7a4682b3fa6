"""The git options every vault-index git call carries: the repository's own code never runs.

Trigger: a write ran the vault repository's git hooks (pre-commit, post-commit, post-index-change
on `git add`) and its core.fsmonitor command (issue 22). A hooksPath often points at a tracked
folder (`.githooks/`, husky), so whoever can push to the vault decides what our writes execute.
Why, option by option, for the commands we run (add, commit, rev-parse, log without -p):
- core.hooksPath=/dev/null: no hook runs (a path that is no folder: git finds no hook in it);
- core.fsmonitor=false: the fsmonitor command or hook is never started;
- commit.gpgsign=false and log.showSignature=false: gpg.program (any command) is never run;
- diff.external and textconv: `log` here never diffs contents, so no diff driver runs;
- core.sshCommand, credential helpers, proxies: only fetch and push use them; we never do.
- filters (clean/smudge/process): `.gitattributes` is tracked and names a filter; the command is
  `filter.<name>.*` in config. A clone never brings config, but a vault received as an archive, on
  a shared drive or a USB stick brings its `.git/config` (a hostile audit ran a clean filter on
  every write that way). Filters the repository's own config defines (local or worktree scope,
  and what it includes) are turned off for our calls; the person's global ones (git-lfs) stay.
- --no-optional-locks: `git status` does not rewrite the index of a command that only reads.
Outcome: every git call of the package is `git_argv(root, ...)`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SAFE_OPTIONS = ("--no-optional-locks", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                "-c", "commit.gpgsign=false", "-c", "log.showSignature=false")
FILTER_KEYS = r"^filter\..*\.(clean|smudge|process|required)$"
_FILTER_KEY = re.compile(r"filter\.[^=\n]+\.(clean|smudge|process|required)")
REPOSITORY_SCOPES = ("local", "worktree")  # config that travels with a copied repository
# Commands of ours that never run a filter (no file content is cleaned or smudged): they skip the
# `git config` that lists the repository's filters. Any other command gets it.
FILTER_FREE = frozenset({"config", "init", "log", "ls-files", "rev-parse"})


def git_argv(root: Path | str, *args: str) -> list[str]:
    """The argv of `git args` in `root` with SAFE_OPTIONS and the repository's own filters off."""
    pairs = zip(args, ("", *args), strict=False)  # (argument, the one before it): skip options and -c values
    command = next((a for a, before in pairs if not a.startswith("-") and before != "-c"), "")
    filters = [] if command in FILTER_FREE else repository_filters_off(root)
    return ["git", *filters, *SAFE_OPTIONS, "-C", str(root), *args]  # ours last: they win


def repository_filters_off(root: Path | str) -> list[str]:
    """`-c` options that turn off each filter defined in `root`'s own config. Listing config runs
    nothing; an empty command is no filter, and required=false keeps git from failing for it."""
    try:  # -z: a value holding a newline cannot pose as another entry (and name core.hooksPath)
        done = subprocess.run(["git", "-C", str(root), "config", "-z", "--show-scope", "--get-regexp", FILTER_KEYS],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    fields = done.stdout.split("\0")  # scope, key + newline + value, scope, ...
    options: list[str] = []
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0]
        if scope in REPOSITORY_SCOPES and _FILTER_KEY.fullmatch(key):
            options += ["-c", f"{key}=false" if key.endswith(".required") else f"{key}="]
    return options
