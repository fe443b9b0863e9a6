"""How much of a program is found in one file of the corpus: the share of its token
12-grams (normalised tokens, tokens.py) that also occur in that file, MOSS's measure
without the winnowing (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003: every k-gram is kept, the corpus is small).

Why k-grams and not an edit distance over the tokens: PETSc programs share a small
vocabulary (PetscCall, (, ID, ...), so a longest common subsequence of two unrelated
programs already covers 50-75% of either (measured over the bundled references: every one
was "nearest" to some unrelated TS test at 0.5-0.75); a 12-token run is rarely shared
by chance, a copied function shares all of its own."""

from __future__ import annotations

from dataclasses import dataclass

from hpcbench.contamination.corpus import Corpus

K = 12
# bench/contamination_threshold.py: independent programs reach at most ~0.4 (every bundled
# reference and sample, and PETSc's own independent tutorials of one problem against each
# other); a tutorial copied with renamed variables reaches 1.0, and still 0.75 or more with a
# third of its lines deleted. Above this a program is flagged as a near-copy.
THRESHOLD = 0.6


def grams(seq: list[str]) -> set[int]:
    return {hash(tuple(seq[i:i + K])) for i in range(len(seq) - K + 1)}


@dataclass(frozen=True)
class Match:
    file: str  # path in PETSc's source, e.g. src/snes/tutorials/ex5.c ("" when none shares a k-gram)
    similarity: float  # share of the program's k-grams found in `file`
    grams: int  # the program's distinct k-grams (a tiny program says little)

    @property
    def flagged(self) -> bool:
        return self.similarity >= THRESHOLD


class Index:
    """Every corpus file's k-grams, built once for many programs."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.files = {name: grams(seq) for name, seq in corpus.files.items()}

    def nearest(self, sequences: list[list[str]], exclude: str = "") -> Match:
        """The corpus file holding the largest share of the program's k-grams (a program of
        several files: the union of theirs); `exclude` leaves one file out (the copy tests)."""
        mine: set[int] = set()
        for seq in sequences:
            mine |= grams(seq)
        if not mine:
            return Match("", 0.0, 0)
        best, best_name = 0, ""
        for name, theirs in self.files.items():
            shared = len(mine & theirs)
            if shared > best and name != exclude:
                best, best_name = shared, name
        return Match(best_name, best / len(mine), len(mine))
