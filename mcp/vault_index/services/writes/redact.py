"""Credentials out of text a hook saves from the session (pre-compact snapshots, handoff notes).

Trigger: the PreCompact snapshot copied the person's prompts verbatim (an AWS key, a GitHub token,
a password) into docs/handoffs/auto/, and in a curated vault committed them (issue 22, High).
Why: a maintained detector knows far more credential shapes than a list written here would.
Outcome: detect-secrets' plugins (imported here only, by the hook scripts; never by the server)
find them and each is replaced by `[redacted <kind>]`. Its keyword rule reads the text as a config
file (`password: x`, `token=x`); its entropy rule also runs on long bare words, since prompts
are prose and rarely quote a secret. Without detect-secrets nothing is saved verbatim: the text
becomes a placeholder (fail closed).
"""

from __future__ import annotations

import re
from functools import lru_cache

UNAVAILABLE = "[not saved: the secret detector (detect-secrets) is not installed]"
_WORD = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")  # a bare word long enough to be a key
# Detectors whose secret_value is only a part of what they matched (a prefix such as "ghp"):
# the whole match goes. The keyword and basic-auth rules keep their context (the key, the user).
_KEEP_CONTEXT = {"KeywordDetector", "BasicAuthDetector"}
_AS_CONFIG = "snapshot.yaml"  # the file type whose keyword rules read `key: value` and `key=value`


@lru_cache(maxsize=1)
def _plugins():
    from detect_secrets.settings import default_settings, get_plugins

    with default_settings():
        return tuple(get_plugins())


def _found(line: str) -> list[tuple[str, str]]:
    """(kind, text to remove) for every credential in `line`."""
    hits: list[tuple[str, str]] = []
    for plugin in _plugins():
        name = plugin.__class__.__name__
        for secret in plugin.analyze_line(filename=_AS_CONFIG, line=line, line_number=1):
            hits.append((secret.type, secret.secret_value or ""))
        if name not in _KEEP_CONTEXT:
            for pattern in getattr(plugin, "denylist", ()):
                hits += [(plugin.secret_type, m.group(0)) for m in pattern.finditer(line)]
        limit = getattr(plugin, "entropy_limit", None)
        if limit is not None:
            charset_ok = getattr(plugin, "charset", None)
            for word in _WORD.findall(line):
                if charset_ok is not None and set(word) - set(charset_ok):
                    continue
                if plugin.calculate_shannon_entropy(word) > limit:
                    hits.append((plugin.secret_type, word))
    return [(kind, value) for kind, value in hits if value and len(value) >= 4]


def redact(text: str) -> str:
    """`text` with every credential the detector finds replaced; a placeholder without the detector."""
    try:
        _plugins()
    except ImportError:
        return UNAVAILABLE
    out = []
    for line in text.split("\n"):
        for kind, value in sorted(set(_found(line)), key=lambda hit: -len(hit[1])):
            line = line.replace(value, f"[redacted {kind.lower()}]")
        out.append(line)
    return "\n".join(out)
