"""Credentials out of text a hook saves from the session (pre-compact snapshots, handoff notes).

Trigger: the PreCompact snapshot copied the person's prompts verbatim (an AWS key, a GitHub token,
a password) into docs/handoffs/auto/, and in a curated vault committed them (issue 22, High).
Why: a maintained detector knows far more credential shapes than a list written here would.
Outcome: detect-secrets' plugins (imported here only, by the hook scripts; never by the server)
find them and each is replaced by `[redacted <kind>]`. Its keyword rule reads the text as a config
file (`password: x`, `token=x`); its entropy rule also runs on long bare words, since prompts
are prose and rarely quote a secret. Without detect-secrets nothing is saved verbatim: the text
becomes a placeholder (fail closed).

Prose too (`_prose`): "the password for prod db is hunter2" has no shape a detector sees, and went
into docs/handoffs/auto/ verbatim (issue 36). After a credential word, a few words, then a link
word (is, was, to, =, a colon), the next word is a value and goes; words that say nothing about a
value ("the password is in the vault", "the token expired") stay. Removing a word too many from a
snapshot costs little; keeping a password costs a rotation.
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
        out.append(_prose(line))
    return "\n".join(out)


# A credential named in prose: the words themselves, and the words before "key" that make it one.
_CREDENTIAL_WORDS = frozenset({
    "password", "passwords", "passwd", "pwd", "passphrase", "passphrases", "passcode", "passcodes", "pin",
    "secret", "secrets", "token", "tokens", "apikey", "api_key", "api-key", "credential", "credentials",
    "login", "2fa", "otp"})
_KEY_KINDS = frozenset({"api", "access", "secret", "private", "ssh", "signing", "license", "licence", "encryption"})
_LINKS = frozenset({"is", "was", "are", "were", "equals", "to", "as", "becomes", "be", "=", ":", "->", "=>"})
# Values that are no value: what prose about a credential says instead of it.
_NOT_VALUES = frozenset({
    "the", "a", "an", "in", "on", "at", "of", "for", "from", "with", "by", "not", "no", "now", "still", "also",
    "here", "there", "it", "this", "that", "my", "our", "your", "their", "its", "and", "or", "but", "be", "been",
    "being", "too", "very", "stored", "saved", "kept", "set", "missing", "wrong", "correct", "expired",
    "invalid", "valid", "required", "needed", "empty", "same", "different", "changed", "rotated", "reset",
    "hidden", "unknown", "ok", "fine", "long", "short", "weak", "strong", "redacted", "[redacted",
    "used", "shown", "sent", "what", "which", "where", "how", "why", "who", "when"})
_NEAR_ONLY = frozenset({"pin", "login"})  # common verbs and nouns: only "pin is 1234", "login: x"
_EDGES = "\"'`()[]{}<>,.;!?\u201c\u201d\u2018\u2019"
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}  # opening -> closing
_LOOKAHEAD = 7  # words between the credential word and its link ("the password for the prod db is")


def _prose(line: str) -> str:
    """`line` with the value after each credential word and its link word replaced."""
    tokens = list(re.finditer(r"\S+", line))
    cuts: list[tuple[int, int, str]] = []
    for i, token in enumerate(tokens):
        word = token.group().strip(_EDGES).rstrip(":=").lower()
        before = tokens[i - 1].group().strip(_EDGES).lower() if i else ""
        if word not in _CREDENTIAL_WORDS and not (word in ("key", "keys") and before in _KEY_KINDS):
            continue
        reach = 1 if word in _NEAR_ONLY else _LOOKAHEAD
        # "password: x", "token=x" ends the credential word itself
        ends = token.group().rstrip(_EDGES.replace(":", "").replace("=", ""))
        follows = i + 1 if ends.endswith((":", "=")) else None
        for j in range(i + 1, min(i + 1 + reach, len(tokens))) if follows is None else ():
            text = tokens[j].group()
            link = text.strip(_EDGES).lower()
            if link in _LINKS or text.endswith((":", "=")):
                follows = j + 1
                break
            if text[-1] in ".;!?":  # the sentence ended before a link
                break
        if follows is None or follows >= len(tokens):
            continue
        value = tokens[follows]
        text = value.group()
        if text[0] in _QUOTES:  # a quoted value: all of it up to its closing quote, spaces and all
            start = value.start() + 1
            closing = line.find(_QUOTES[text[0]], start)
            bare = line[start:closing if closing > start else value.end()]
        else:
            bare = text.strip(_EDGES)
            start = value.start() + text.index(bare) if bare else value.start()
        if not bare or bare.lower().strip(_EDGES) in _NOT_VALUES or bare.lower() in _CREDENTIAL_WORDS:
            continue
        singular = word[:-1] if word.endswith("s") and word[:-1] in _CREDENTIAL_WORDS | {"key"} else word
        cuts.append((start, start + len(bare), singular))
    for start, end, word in sorted(set(cuts), reverse=True):
        line = line[:start] + f"[redacted {word} in prose]" + line[end:]
    return line
