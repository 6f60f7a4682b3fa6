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
- filters (clean/smudge/process): `.gitattributes` is tracked and comes with a clone, but it only
  names a filter; the command is `filter.<name>.*` in config, which a clone never brings (only
  this machine's own config defines it, e.g. git-lfs). Turning filters off would store an LFS
  note's raw text instead of its pointer, so they stay: what they run is the person's own setup.
Outcome: `git *SAFE_OPTIONS -C root ...` in services/writes/provenance.py.
"""

from __future__ import annotations

SAFE_OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgsign=false",
                "-c", "log.showSignature=false")
