"""How much of a program is found in one file of the corpus: the share of its token
12-grams (normalised tokens, tokens.py) that also occur in that file, MOSS's measure
without the winnowing (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003: every k-gram is kept, the corpus is small).

Why k-grams and not an edit distance over the tokens: PETSc programs share a small
vocabulary (PetscCall, (, ID, ...), so a longest common subsequence of two unrelated
programs already covers 50-75% of either (measured over the bundled references: every one
was "nearest" to some unrelated TS test at 0.5-0.75); a 12-token run is rarely shared
by chance, a copied function shares all of its own.

The index is two sorted numpy arrays (k-gram hash, file) with one entry per distinct k-gram
of each file, kept beside the tokenised corpus: a program is matched with one searchsorted,
in milliseconds, so planning can measure every submission of a campaign."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpcbench.contamination.corpus import Corpus

K = 12
# bench/contamination_threshold.py: independent programs reach at most ~0.4 (every bundled
# reference and sample: 0.07-0.38 against PETSc 3.26.1); a tutorial copied with its own names
# renamed, numbers and messages changed reaches 1.0, 0.80 or more with a fifth of its lines
# deleted and 0.63 or more with two fifths deleted. At or above this a program is a near-copy.
THRESHOLD = 0.6


def grams(seq: list[str]) -> np.ndarray:
    """The distinct k-grams of a token sequence as stable 64-bit hashes (sorted)."""
    out = {int.from_bytes(hashlib.blake2b("\x1f".join(seq[i:i + K]).encode(), digest_size=8).digest(), "little")
           for i in range(len(seq) - K + 1)}
    return np.array(sorted(out), dtype=np.uint64)


@dataclass(frozen=True)
class Match:
    file: str  # path in PETSc's source, e.g. src/snes/tutorials/ex5.c ("" when none shares a k-gram)
    similarity: float  # share of the program's k-grams found in `file`
    grams: int  # the program's distinct k-grams (a tiny program says little)

    @property
    def flagged(self) -> bool:
        return self.similarity >= THRESHOLD

    def as_dict(self) -> dict:
        return {"file": self.file, "similarity": round(self.similarity, 4), "grams": self.grams,
                "near_copy": self.flagged}


class Index:
    """Every corpus file's k-grams, built once and kept in a cache file for many programs:
    `library` (the names tokenising keeps) and `source` come with it, so matching a program
    needs neither the corpus nor its tokens."""

    def __init__(self, names: list[str], hashes: np.ndarray, owner: np.ndarray, library: frozenset[str],
                 source: str = "", version: str = "") -> None:
        self.names, self.hashes, self.owner = names, hashes, owner
        self.library, self.source, self.version = library, source, version

    @classmethod
    def build(cls, corpus: Corpus) -> Index:
        names = sorted(corpus.files)
        per = [grams(corpus.files[n]) for n in names]
        hashes = np.concatenate(per) if per else np.zeros(0, np.uint64)
        owner = np.concatenate([np.full(len(g), i, np.int32) for i, g in enumerate(per)]) if per else \
            np.zeros(0, np.int32)
        order = np.argsort(hashes, kind="stable")
        return cls(names, hashes[order], owner[order], corpus.library, corpus.source, corpus.version)

    def save(self, path: Path) -> None:
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, hashes=self.hashes, owner=self.owner, names=np.array(self.names),
                 library=np.array(sorted(self.library)), meta=np.array([self.source, self.version]))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Index:
        with np.load(path) as z:
            meta = z["meta"].tolist()
            return cls(z["names"].tolist(), z["hashes"], z["owner"], frozenset(z["library"].tolist()),
                       meta[0], meta[1])

    def nearest(self, sequences: list[list[str]], exclude: str = "") -> Match:
        """The corpus file holding the largest share of the program's k-grams (a program of
        several files: the union of theirs); `exclude` leaves one file out."""
        mine = np.unique(np.concatenate([grams(s) for s in sequences])) if sequences else np.zeros(0, np.uint64)
        if not len(mine) or not len(self.names):
            return Match("", 0.0, len(mine))
        lo = np.searchsorted(self.hashes, mine, side="left")
        hi = np.searchsorted(self.hashes, mine, side="right")
        hit = np.concatenate([self.owner[a:b] for a, b in zip(lo, hi, strict=True) if b > a] or
                             [np.zeros(0, np.int32)])
        counts = np.bincount(hit, minlength=len(self.names))
        if exclude in self.names:
            counts[self.names.index(exclude)] = 0
        best = int(np.argmax(counts))
        if counts[best] == 0:
            return Match("", 0.0, len(mine))
        return Match(self.names[best], float(counts[best]) / len(mine), len(mine))
