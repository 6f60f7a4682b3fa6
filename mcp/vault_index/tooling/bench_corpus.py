"""The bench's synthetic vault: a Zipf-like vocabulary, notes of SECTIONS_PER_FILE sections, and
a query mix; plus the load average every bench reports beside its numbers.

Below bench.py and the benches that reuse its words (footprint, million), so none imports bench.py.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

SECTIONS_PER_FILE = 5  # each "## section" is one chunk (sections stay well under the chunk size)
FILES_PER_DIR = 500
COMMON = """the project deploy cache database query index server client meeting decision review
release bug fix test build pipeline config migration schema latency memory timeout retry error
log metric alert dashboard user account token session auth permission role team sprint ticket
design document note idea plan roadmap budget vendor contract invoice customer feedback support
incident outage rollback hotfix branch merge commit repository docker kubernetes cluster node
pod service endpoint api request response payload json yaml parser lexer compiler runtime python
rust typescript frontend backend mobile android ios browser cookie storage bucket queue worker job
scheduler cron backup restore snapshot replica shard partition vector embedding search ranking
model training dataset evaluation benchmark prompt agent tool workflow hook plugin extension
install upgrade dependency version package license security audit secret key certificate network
proxy dns firewall load balancer cdn latency throughput capacity cost estimate forecast quarter
goal objective result lesson learned retrospective postmortem owner stakeholder interview hiring
onboarding handbook policy process checklist template weekly daily standup demo launch""".split()
SYLLABLES = "ka ri to mo na lu ve shi ra po de ni zu ba ko li me sa tu ga".split()


class Vocabulary:
    def __init__(self, rng: random.Random, n_rare: int):
        extra = {"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(3000)}
        self.words = list(dict.fromkeys(COMMON + sorted(extra)))
        self.weights = [1.0 / (rank + 8) for rank in range(len(self.words))]  # Zipf-like
        self.rare = [f"{''.join(rng.choices(SYLLABLES, k=3)).capitalize()}{i}" for i in range(n_rare // 2)]
        self.rare += [f"INC-{10000 + i * 7}" for i in range(n_rare - len(self.rare))]


def write_vault(root: Path, chunks: int, seed: int = 7) -> dict:
    """About `chunks` sections of ~80 words in files of SECTIONS_PER_FILE sections; returns facts."""
    rng = random.Random(seed)
    vocab = Vocabulary(rng, max(20, chunks // 10))
    n_files = max(1, -(-chunks // SECTIONS_PER_FILE))
    total_words = n_files * SECTIONS_PER_FILE * 90
    picks = iter(rng.choices(vocab.words, cum_weights=_cumulative(vocab.weights), k=total_words))
    rare_used: list[str] = []
    for f in range(n_files):
        folder = root / f"d{f // FILES_PER_DIR:03d}"
        if f % FILES_PER_DIR == 0:
            folder.mkdir(parents=True, exist_ok=True)
        title = f"{next(picks).capitalize()} {next(picks)} note {f}"
        parts = [f"---\ntags: [{next(picks)}, bench]\nstatus: {'deprecated' if f % 50 == 0 else 'canonical'}\n---\n",
                 f"# {title}\n"]
        for s in range(SECTIONS_PER_FILE):
            words = [next(picks) for _ in range(rng.randint(60, 90))]
            if rng.random() < 0.4:
                name = rng.choice(vocab.rare)
                words.insert(rng.randrange(len(words)), name)
                rare_used.append(name)
            cut = len(words) // 2
            parts.append(f"## {words[0].capitalize()} {words[1]} {s}\n\n"
                         f"{' '.join(words[:cut])}.\n\n{' '.join(words[cut:])}.\n")
        (folder / f"n{f:06d}.md").write_text("\n".join(parts), encoding="utf-8")
    return {"files": n_files, "vocab": vocab, "rare_used": rare_used}


def _cumulative(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


def make_queries(facts: dict, n: int, seed: int = 11) -> list[str]:
    """A mix: paraphrase-like common words, rare name or id plus context, and questions."""
    rng = random.Random(seed)
    vocab = facts["vocab"]
    mid = vocab.words[20:600]
    rare = facts["rare_used"] or vocab.rare
    queries = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            queries.append(" ".join(rng.sample(mid, 3)))
        elif kind == 1:
            queries.append(f"{rng.choice(rare)} {rng.choice(mid)}")
        else:
            queries.append(f"how did we handle the {rng.choice(mid)} {rng.choice(mid)} problem")
    return queries


def _loadavg() -> list[float] | None:
    """1, 5 and 15 minute load averages: other work on the machine skews every number here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
