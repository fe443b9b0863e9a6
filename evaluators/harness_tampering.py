"""Source that tampers with what measures it: a deterministic scan of the C syntax tree
(tree-sitter, evaluators/csource.py), shared by the API-usage gate and `hpcbench lint`.

hpcbench confirms at run time that the instruments it asked for ran (jobs/instruments.py),
but a program runs in the same process as PETSc and valgrind: it can forge what it
disables, or behave only where it is watched. What such a program has to write is
visible in its source, and no PETSc program needs it.

Finding codes (HB4xx fail the API-usage gate; HB45x are findings shown with the evidence):
    HB401 sets, clears or inserts an option hpcbench uses to instrument the run, or wipes
          the options database
    HB402 reads hpcbench's instrumentation options or PETSc's allocator state (to behave
          differently where it is checked)
    HB403 closes or redirects stdin/stdout/stderr, or replaces PETSc's printing
    HB404 `#line`, or redefines __FILE__/__LINE__ (misattributes diagnostics)
    HB405 valgrind client requests or detection (valgrind.h, RUNNING_ON_VALGRIND, its
          preload library named in a string)
    HB406 replaces or reconfigures PETSc's allocator, or allocates behind the C library's malloc
          (__libc_malloc, dlsym(RTLD_NEXT), sbrk, a malloc() of its own)
    HB407 reads its own process's records in /proc, or its environment for the harness
          (LD_PRELOAD, VALGRIND*, PETSC_OPTIONS*, HPCBENCH*)
    HB408 names PETSc's options files (petscrc, .petscrc) or hpcbench's log folder
    HB451 reads another environment variable, or the environment as a whole
    HB452 inline assembly (how valgrind's client requests are written without valgrind.h)
    HB453 code that runs after PetscFinalize (atexit, destructor functions)
    HB454 sets an option whose name is computed at run time, or pushes an options prefix
    HB455 PetscInitialize reads an options file of the program's own
    HB456 changes its working folder
    HB457 prints PETSc's allocator records itself (PetscMallocDump, PetscMallocView)
"""

from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Node, Query, QueryCursor

from hpcbench.evaluators.csource import LANGUAGE, syntax_tree
from hpcbench.evaluators.petsc_conventions import LintFinding

FAILING = ("HB401", "HB402", "HB403", "HB404", "HB405", "HB406", "HB407", "HB408")

# Options that decide what hpcbench's instruments record: PETSc's allocator checks, its logging,
# the options machinery itself (PETSc 3.26 src/sys/objects/init.c, pinit.c PetscFinalize).
# Measured on PETSc's 408 C tutorials: none sets these; -info, -no_signal_handler and a
# tutorial's own -log_stages are set or read there, and are not hpcbench's.
HARNESS_OPTION = re.compile(r"^-?(malloc\w*|log_view\w*|log_all|log_trace|log_exclude\w*|log|options_(left|view|"
                            r"file\w*|monitor\w*)|skip_petscrc|prefix_(push|pop)|objects_dump|memory_view)$")
# The options hpcbench passes: a program reading them tells its checked run from the others.
PASSED_OPTION = re.compile(r"^-?(malloc_(debug|dump|view|test)|log_view|options_left|skip_petscrc)$")
OPTION_WRITERS = {"PetscOptionsSetValue", "PetscOptionsClearValue", "PetscOptionsInsertString",
                  "PetscOptionsInsertStringYAML", "PetscOptionsInsertFile", "PetscOptionsInsertFileYAML",
                  "PetscOptionsInsertArgs", "PetscOptionsSetAlias", "PetscOptionsReject"}
DATABASE_WIPERS = {"PetscOptionsClear", "PetscOptionsDestroyDefault", "PetscOptionsCreateDefault"}
OPTION_READERS = re.compile(r"^PetscOptions(HasName|Get\w+|Find\w*|Used|Bool|Int|Real|String|Scalar|Enum|"
                            r"EList|Name)\w*$")
# (PetscMallocGetCurrentUsage tells too, but programs print their memory with it: not flagged.)
ALLOCATOR_STATE = {"PetscMallocGetDebug", "PetscMallocViewGet", "PetscMallocTraceGet", "PetscMallocLogRequestedSizeGet"}
ALLOCATOR_SETTERS = {"PetscMallocSet", "PetscMallocClear", "PetscMallocSetDebug", "PetscMallocViewSet",
                     "PetscMallocTraceSet", "PetscMallocSetCoalesce", "PetscMallocSetDRAM", "PetscMallocResetDRAM",
                     "PetscMallocLogRequestedSizeSet", "PetscMallocSetCUDAHost", "PetscMallocResetCUDAHost"}
COMPARERS = {"strcmp", "strncmp", "strcasecmp", "strncasecmp", "strstr", "strcasestr", "memcmp", "PetscStrcmp",
             "PetscStrncmp", "PetscStrcasecmp", "PetscStrncasecmp", "PetscStrstr", "PetscStrbeginswith",
             "PetscStrendswith", "PetscStrInList", "PetscStrcmpAny"}
STD_STREAMS = {"stdout", "stderr", "stdin", "PETSC_STDOUT", "PETSC_STDERR"}
STD_FDS = {"0", "1", "2", "STDIN_FILENO", "STDOUT_FILENO", "STDERR_FILENO"}
PRINT_HOOKS = {"PetscVFPrintf", "PetscErrorPrintf", "PetscHelpPrintf", "PETSC_STDOUT", "PETSC_STDERR", "stdout",
               "stderr", "stdin"}
STDOUT_VIEWERS = re.compile(r"^PETSC_VIEWER_STD(OUT|ERR)_(WORLD|SELF)|PETSC_VIEWER_STD(OUT|ERR)_\(")
VIEWER_REDIRECTS = {"PetscViewerASCIISetFILE", "PetscViewerFileSetName", "PetscViewerFileSetMode",
                    "PetscViewerSetType"}
HARNESS_ENV = re.compile(r"^(LD_|VALGRIND|PETSC_OPTIONS|HPCBENCH|OMPI_MCA_|PMIX_MCA_)")
# (/proc/self/status is how a program reads its own memory use: not flagged.)
PROC_SELF = re.compile(r"^/proc/(self|thread-self|\d+|%d|%s)/(cmdline|environ|maps|smaps\w*|fd|exe|auxv|mount\w*)")
RC_FILE = re.compile(r"(^|/)\.?petscrc$")
PRELOAD_TEXT = re.compile(r"vgpreload|LD_PRELOAD")
# the malloc recorder's variables and records (jobs/raw_malloc.py), however the program reaches them
RECORDER_TEXT = re.compile(r"HPCBENCH_|raw_malloc\.|libhbmalloc")
VALGRIND_TEXT = re.compile(r"valgrind|memcheck", re.I)
# Calls where a string naming valgrind looks for it (a help text may mention it freely).
LOOKUPS = COMPARERS | {"getenv", "secure_getenv", "fopen", "open", "openat", "opendir", "access", "stat", "lstat",
                       "readlink", "dlopen", "PetscOptionsGetenv"}
LOG_FOLDER = re.compile(r"(^|/)\.\./logs(/|$)")
AFTER_FINALIZE = {"atexit", "on_exit", "at_quick_exit"}
# The C library's allocator behind malloc, or a malloc of the program's own: a block taken so
# passes the malloc recorder by (jobs/raw_malloc.py), which sees the program's calls of malloc.
RAW_ALLOCATOR = re.compile(r"^(__libc_\w*(alloc|free)\w*|RTLD_NEXT|sbrk|brk|__morecore)$")
ALLOCATOR_NAMES = {"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
                   "memalign", "valloc", "pvalloc"}

_QUERY = Query(LANGUAGE, " ".join(f"({t}) @{t}" for t in (
    "call_expression", "preproc_call", "preproc_include", "preproc_def", "preproc_function_def",
    "assignment_expression", "identifier", "gnu_asm_expression", "attribute_specifier", "string_literal",
    "function_definition", "preproc_if")))


def _text(n: Node | None) -> str:
    return n.text.decode("utf-8", "replace") if n is not None and n.text else ""


def _literal(n: Node) -> str | None:
    """The value of a string literal (concatenations joined), None for anything else."""
    if n.type == "string_literal":
        return "".join(_text(c) for c in n.children if c.type in ("string_content", "escape_sequence"))
    if n.type == "concatenated_string":
        parts = [_literal(c) for c in n.named_children]
        return "".join(p for p in parts if p is not None)
    return None


def _args(call: Node) -> list[Node]:
    al = call.child_by_field_name("arguments")
    return [a for a in al.named_children if a.type != "comment"] if al is not None else []


def _callee(call: Node) -> str:
    fn = call.child_by_field_name("function")
    return _text(fn) if fn is not None and fn.type == "identifier" else ""


class _Scan:
    def __init__(self, file: str):
        self.file = file
        self.findings: list[LintFinding] = []

    def add(self, node: Node, code: str, message: str) -> None:
        self.findings.append(LintFinding(self.file, node.start_point[0] + 1, node.start_point[1] + 1, code, message))

    def call(self, node: Node) -> None:
        name, args = _callee(node), _args(node)
        lits = [v.strip() for a in args if (v := _literal(a)) is not None]
        words = [w for v in lits for w in v.split() if w.startswith("-")]
        harness = [w for w in words if HARNESS_OPTION.match(w)]
        passed = [v for v in lits if PASSED_OPTION.match(v)]
        if name in OPTION_WRITERS and harness:
            self.add(node, "HB401", f"{name} changes hpcbench's instrumentation option {harness[0]!r}")
        elif name in DATABASE_WIPERS:
            self.add(node, "HB401", f"{name} replaces or wipes the options database, hpcbench's options with it")
        elif name in ("PetscOptionsSetValue", "PetscOptionsClearValue") and args and len(args) > 1 and \
                _literal(args[1]) is None:
            self.add(node, "HB454", f"{name} with an option name computed at run time ({_text(args[1])[:40]})")
        elif name in ("PetscOptionsPrefixPush", "PetscOptionsPush", "PetscOptionsPop"):
            self.add(node, "HB454", f"{name}: options afterwards are named or looked up elsewhere")
        elif (OPTION_READERS.match(name) or name in COMPARERS) and passed:
            self.add(node, "HB402", f"{name} looks for hpcbench's instrumentation option {passed[0]!r}")
        elif name in ALLOCATOR_STATE:
            self.add(node, "HB402", f"{name} asks whether PETSc's checked allocator or logging is on")
        elif name in ALLOCATOR_SETTERS:
            self.add(node, "HB406", f"{name} replaces or reconfigures PETSc's allocator")
        elif name in ("PetscMallocDump", "PetscMallocView"):
            self.add(node, "HB457", f"{name}: the program prints PETSc's allocator records itself")
        else:
            self.streams(node, name, args)
            self.environment(node, name, args)
            self.misc(node, name, args, lits)

    def streams(self, node: Node, name: str, args: list[Node]) -> None:
        texts = [_text(a).strip() for a in args]
        if name in ("fclose", "freopen") and texts and texts[-1] in STD_STREAMS:
            self.add(node, "HB403", f"{name}({texts[-1]}) closes or redirects a standard stream")
        elif name in ("close", "dup2", "dup3") and texts and _fd_arg(texts[1 if name != "close" else 0]):
            self.add(node, "HB403", f"{name} on a standard file descriptor ({', '.join(texts[:2])})")
        elif name in VIEWER_REDIRECTS and texts and STDOUT_VIEWERS.match(texts[0]):
            self.add(node, "HB403", f"{name} redirects PETSc's standard viewer {texts[0]}")

    def environment(self, node: Node, name: str, args: list[Node]) -> None:
        if name in ("getenv", "secure_getenv", "PetscOptionsGetenv"):
            var = _literal(args[-2 if name == "PetscOptionsGetenv" else 0]) if args else None
            if var is not None and HARNESS_ENV.match(var):
                self.add(node, "HB407", f"{name}({var!r}) reads the harness's environment")
            else:
                self.add(node, "HB451", f"{name}({var if var is not None else _text(args[0])[:30] if args else ''}) "
                                        "reads the environment")
        elif name in AFTER_FINALIZE:
            self.add(node, "HB453", f"{name} registers code that runs after PetscFinalize")
        elif name in ("chdir", "fchdir"):
            self.add(node, "HB456", f"{name} changes the working folder")

    def misc(self, node: Node, name: str, args: list[Node], lits: list[str]) -> None:
        if name in ("PetscInitialize", "PetscInitializeNoPointers") and len(args) > 2 and \
                _text(args[2]).strip() not in ("NULL", "0", "(char *)0", "(char*)0", "PETSC_NULLPTR", "nullptr"):
            self.add(node, "HB455", f"PetscInitialize reads options from the program's own file {_text(args[2])}")

    def literal(self, node: Node) -> None:
        value = _literal(node) or ""
        if VALGRIND_TEXT.search(value) and _argument_of(node) in LOOKUPS:
            self.add(node, "HB405", f"looks for valgrind ({value[:60]!r})")
        else:
            self.literal_value(node, value)

    def literal_value(self, node: Node, value: str) -> None:
        if PROC_SELF.match(value):
            self.add(node, "HB407", f"names its process's records in /proc ({value!r})")
        elif RC_FILE.search(value):
            self.add(node, "HB408", f"names PETSc's options file {value!r}")
        elif LOG_FOLDER.search(value):
            self.add(node, "HB408", f"names hpcbench's log folder ({value!r})")
        elif PRELOAD_TEXT.search(value):
            self.add(node, "HB405", f"looks for valgrind ({value[:60]!r})")
        elif RECORDER_TEXT.search(value):
            self.add(node, "HB407", f"names the harness's malloc record ({value[:60]!r})")


def _defined_name(decl: Node | None) -> str:
    """The name a function definition's declarator defines (through pointer declarators)."""
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    return _text(decl.child_by_field_name("declarator")).strip() if decl is not None else ""


def _argument_of(node: Node) -> str:
    """The function a node is a direct argument of ("" if none)."""
    parent = node.parent
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        return _callee(parent.parent)
    return ""


def _dead(root: Node, ifs: list[Node]) -> list[tuple[int, int]]:
    """Byte ranges inside `#if 0` blocks (minus their #else): code that never runs is no finding."""
    out = []
    for n in ifs:
        if _text(n.child_by_field_name("condition")).strip() != "0":
            continue
        alt = n.child_by_field_name("alternative")
        out += [(n.start_byte + 1, alt.start_byte), (alt.end_byte, n.end_byte)] if alt is not None else \
            [(n.start_byte + 1, n.end_byte)]
    return out


def _fd_arg(text: str) -> bool:
    return text in STD_FDS or bool(re.fullmatch(r"fileno\s*\(\s*(stdout|stderr|stdin)\s*\)", text))


def _directive(scan: _Scan, node: Node, kind: str) -> None:
    if kind == "preproc_call":
        directive = _text(node.child_by_field_name("directive")).strip()
        arg = _text(node.child_by_field_name("argument"))
        if directive == "#line":
            scan.add(node, "HB404", f"#line {arg.strip()[:60]}: diagnostics would name another file or line")
        elif directive == "#undef" and arg.strip() in ("__FILE__", "__LINE__"):
            scan.add(node, "HB404", f"#undef {arg.strip()}")
    elif kind in ("preproc_def", "preproc_function_def"):
        name = _text(node.child_by_field_name("name")).strip()
        if name in ("__FILE__", "__LINE__", "__func__"):
            scan.add(node, "HB404", f"#define {name}")
        # A macro's strings are text to tree-sitter, not literals: looked at one by one.
        for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', _text(node.child_by_field_name("value"))):
            scan.literal_value(node, m.group(1))
    elif kind == "preproc_include":
        path = _text(node.child_by_field_name("path")).strip('<>"')
        if "valgrind" in path or path.endswith(("memcheck.h", "valgrind.h", "callgrind.h")):
            scan.add(node, "HB405", f"includes {path} (valgrind client requests)")


def _structure(scan: _Scan, node: Node, kind: str) -> None:
    if kind == "assignment_expression":
        left = _text(node.child_by_field_name("left")).strip()
        if left in PRINT_HOOKS:
            scan.add(node, "HB403", f"assigns {left}: PETSc's or the C library's output goes elsewhere")
    elif kind == "identifier":
        name = _text(node)
        if name in ("RUNNING_ON_VALGRIND", "PETSC_RUNNING_ON_VALGRIND") or name.startswith("VALGRIND_"):
            scan.add(node, "HB405", f"{name}: a valgrind client request")
        elif name in ("environ", "__environ", "_environ"):
            scan.add(node, "HB451", f"{name}: reads the whole environment")
        elif RAW_ALLOCATOR.match(name):
            scan.add(node, "HB406", f"{name}: allocates behind malloc, where the record of the program's "
                                    "allocations does not look")
    elif kind == "gnu_asm_expression":
        scan.add(node, "HB452", "inline assembly")
    elif kind == "attribute_specifier" and re.search(r"\bdestructor\b", _text(node)):
        scan.add(node, "HB453", "a destructor function runs after PetscFinalize")
    elif kind == "function_definition":
        decl = node.child_by_field_name("declarator")
        params = decl.child_by_field_name("parameters") if decl is not None and decl.type == "function_declarator" \
            else None
        if _text(decl.child_by_field_name("declarator") if decl is not None else None) == "main" and \
                params is not None and len(params.named_children) >= 3:
            scan.add(node, "HB451", "main() takes the environment as its third argument")
        if (own := _defined_name(decl)) in ALLOCATOR_NAMES:
            scan.add(node, "HB406", f"defines its own {own}(): the C library's allocator replaced")


@lru_cache(maxsize=128)
def scan_source(file: str, source: str) -> tuple[LintFinding, ...]:
    """Every tampering finding of one C source, in source order."""
    root = syntax_tree(source).root_node
    scan = _Scan(file)
    found = QueryCursor(_QUERY).captures(root)
    dead = _dead(root, found.get("preproc_if", []))
    nodes = sorted(((n, kind) for kind, ns in found.items() for n in ns if kind != "preproc_if"
                    and not any(lo <= n.start_byte < hi for lo, hi in dead)), key=lambda x: x[0].start_byte)
    for node, kind in nodes:
        if kind == "call_expression":
            scan.call(node)
        elif kind == "string_literal":
            scan.literal(node)
        elif kind.startswith("preproc_"):
            _directive(scan, node, kind)
        else:
            _structure(scan, node, kind)
    return tuple(scan.findings)


def failing(findings: tuple[LintFinding, ...] | list[LintFinding]) -> list[LintFinding]:
    return [f for f in findings if f.code in FAILING]
