"""Contamination: how close a program is to PETSc's own tutorials and tests of the
installed version (the files a model has most likely been trained on). `hpcbench problems
--contamination` measures each problem's reference; the report shows each submission's.

    corpus      PETSc's examples from a source tree or the release tarball, tokenised, cached
    tokens      C source -> normalised tokens (tree-sitter-c; names, strings, numbers abstracted)
    similarity  the nearest file and the share of the program's token 12-grams found in it
"""

from __future__ import annotations

from pathlib import Path

from hpcbench.contamination.corpus import SUFFIXES, Corpus, default_source, index_cache, load_corpus
from hpcbench.contamination.similarity import THRESHOLD, Index, K, Match
from hpcbench.contamination.tokens import tokens

# what a program may hold: the corpus's suffixes, which cover every one a submission accepts (a
# tutorial copied into a .hpp header counts; tests/test_contamination.py checks the cover)
PROGRAM_SUFFIXES = SUFFIXES


def program_match(index: Index, sources: dict[str, str], exclude: str = "") -> Match:
    """The nearest corpus file to a program given as {file name: C source}."""
    seqs = [tokens(text, index.library) for name, text in sorted(sources.items())
            if name.endswith(PROGRAM_SUFFIXES)]
    return index.nearest(seqs, exclude=exclude)


def open_index(source: Path, version: str = "") -> Index:
    """The k-gram index of the PETSc examples at `source` (tree or tarball): read from its cache
    file (milliseconds), else built from the tokenised corpus (itself cached) and kept."""
    cache = index_cache(Path(source))
    if cache.is_file():
        try:
            return Index.load(cache)
        except (OSError, ValueError, KeyError):
            pass  # an unreadable cache (another format, cut short) is rebuilt
    index = Index.build(load_corpus(Path(source), version))
    cache.parent.mkdir(parents=True, exist_ok=True)
    index.save(cache)
    return index


def folder_sources(folder: Path) -> dict[str, str]:
    """A program folder's C sources (a reference or a submission), by file name."""
    return {p.name: p.read_text(errors="replace") for p in sorted(Path(folder).iterdir())
            if p.is_file() and p.suffix in PROGRAM_SUFFIXES}


__all__ = ["K", "THRESHOLD", "Corpus", "Index", "Match", "default_source", "folder_sources", "index_cache",
           "load_corpus", "open_index", "program_match", "tokens"]
