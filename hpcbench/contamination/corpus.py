"""The corpus: PETSc's tutorials and tests of one PETSc version, as token sequences.

An installed PETSc does not carry its examples (`make install` copies include/ and lib/
only), so they come from PETSc's source: a source tree (`$PETSC_DIR/src` of an in-place
build, or any checkout) or the release tarball (the `petsc-<version>.tar.gz` sdist that
scripts/setup.sh keeps in `<venv>/hpcbench-cache/`). The tokenised corpus is cached per
source under the user's cache folder: tokenising 1,400 files takes about a minute once."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from hpcbench.contamination.tokens import library_names, tokens
from hpcbench.errors import ConfigError

SUFFIXES = (".c", ".cxx", ".cpp", ".cu", ".h", ".hpp", ".cuh")
CACHE_FORMAT = 1  # bump when tokens.py changes what a sequence holds


@dataclass(frozen=True)
class Corpus:
    source: str  # where the files came from (tree or tarball)
    version: str
    files: dict[str, list[str]]  # src/.../tutorials/ex5.c -> normalised tokens
    library: frozenset[str]


def _is_example(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] == "src" and ("tutorials" in parts or "tests" in parts) and rel.endswith(SUFFIXES)


def _read_tree(root: Path) -> tuple[dict[str, str], list[str]]:
    examples = {}
    for path in sorted((root / "src").rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and _is_example(rel):
            examples[rel] = path.read_text(errors="replace")
    headers = [p.read_text(errors="replace") for p in sorted((root / "include").glob("*.h"))]
    return examples, headers


def _read_tarball(path: Path) -> tuple[dict[str, str], list[str]]:
    examples, headers = {}, []
    with tarfile.open(path) as tar:
        for m in tar:
            if not m.isfile():
                continue
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            is_header = rel.startswith("include/") and rel.count("/") == 1 and rel.endswith(".h")
            if _is_example(rel) or is_header:
                f = tar.extractfile(m)
                text = f.read().decode("utf-8", errors="replace") if f else ""
                if is_header:
                    headers.append(text)
                else:
                    examples[rel] = text
    return examples, headers


def default_source(petsc_dir: Path | None, version: str) -> Path:
    """The PETSc source for `version`: `petsc_dir` itself when it is a source tree, else the
    sdist kept by scripts/setup.sh; an error saying what to pass when neither is there."""
    if petsc_dir is not None and (Path(petsc_dir) / "src").is_dir():
        return Path(petsc_dir)
    sdist = Path(sys.prefix) / "hpcbench-cache" / f"petsc-{version}.tar.gz"
    if sdist.is_file():
        return sdist
    raise ConfigError(sdist, None, f"no PETSc {version} source to compare against: {petsc_dir}/src is not there (an "
                      "installed PETSc keeps no tutorials) and this tarball is missing. Pass --petsc-src with a PETSc "
                      f"source tree or its release tarball (pip download --no-binary :all: --no-deps petsc=={version})")


def _cache_file(source: Path) -> Path:
    st = source.stat()
    key = hashlib.sha256(f"{CACHE_FORMAT}:{source.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hpcbench" / f"petsc-examples-{key}.json.gz"


def index_cache(source: Path) -> Path:
    """Where the k-gram index of the corpus at `source` is kept (similarity.Index)."""
    return _cache_file(Path(source)).with_suffix("").with_suffix(".idx.npz")


def load_corpus(source: Path, version: str = "") -> Corpus:
    """PETSc's tutorials and tests at `source` (tree or tarball), tokenised (cached)."""
    source = Path(source)
    if not source.exists():
        raise ConfigError(source, "--petsc-src", "no such file or folder")
    cache = _cache_file(source)
    if cache.is_file():
        data = json.loads(gzip.decompress(cache.read_bytes()))
        return Corpus(data["source"], data["version"], data["files"], frozenset(data["library"]))
    if source.is_dir():
        if not (source / "src").is_dir() or not (source / "include").is_dir():
            raise ConfigError(source, "--petsc-src", "not a PETSc source tree (no src/ and include/)")
        examples, headers = _read_tree(source)
    elif tarfile.is_tarfile(source):
        examples, headers = _read_tarball(source)
    else:
        raise ConfigError(source, "--petsc-src", "neither a PETSc source tree nor a tarball")
    if not examples or not headers:
        raise ConfigError(source, "--petsc-src", "no tutorials or tests under src/, or no headers in include/")
    library = library_names(headers)
    files = {rel: tokens(text, library) for rel, text in examples.items()}
    corpus = Corpus(str(source), version, files, library)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(gzip.compress(json.dumps({"source": corpus.source, "version": version, "files": files,
                                              "library": sorted(library)}).encode(), 6))
    tmp.replace(cache)
    return corpus
