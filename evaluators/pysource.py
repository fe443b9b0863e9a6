"""Python (petsc4py) source facts from Python's own parser, shared by the evaluators that judge a
Python submission as the C ones judge C (csource.py): which PETSc classes it creates, whether
PETSc reads its command line, which objects it destroys, what it prints through, and what it
must not do (solve the problem with numpy, rewrite the options the harness gave PETSc).

Names are followed as written: `PETSc.Vec().create(...)`, `from petsc4py.PETSc import Vec`,
`import numpy as np; np.linalg.solve`. A program that hides a call behind getattr or exec is
not followed: what that hides cannot reach C (ctypes is not loadable in its sandbox,
jobs/build_python.py) and its answers are still checked."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

# problem.json modules -> the petsc4py classes (or factories) that show one is really used
MODULE_CLASSES: dict[str, tuple[str, ...]] = {
    "Vec": ("Vec",), "VecScatter": ("Scatter",), "KSP": ("KSP", "SNES.getKSP", "TS.getSNES"),
    "SNES": ("SNES",), "TS": ("TS",), "Tao": ("TAO",), "DMDA": ("DMDA",), "DMPlex": ("DMPlex",),
    "DMStag": ("DMStag",), "PetscFE": ("FE",), "Mat": ("Mat",),
}
# numpy calls that solve a whole system or factor it: the PETSc solver the task asks for bypassed
DENSE_SHORTCUTS = frozenset({"solve", "inv", "lstsq", "pinv", "eig", "eigh", "eigvals", "eigvalsh", "cholesky",
                             "qr", "svd", "tensorsolve", "tensorinv", "matrix_power"})
# Options the harness gives PETSc (jobs/instruments.py): a program that sets, deletes or clears
# them changes what measures it
HARNESS_OPTIONS = ("log_view", "malloc_dump", "malloc_debug", "malloc_view", "options_left", "skip_petscrc",
                   "options_file", "malloc_test", "log_view_memory")
OPTION_WRITERS = frozenset({"setValue", "delValue", "clear", "insertString", "create", "prefixPush"})
# Environment a program reads to tell its valgrind run or the harness's settings from the others
# (the C rules' HB405/HB406, evaluators/harness_tampering.py): valgrind's preload, the allocator
# its Python runs switch to (PYTHONMALLOC=malloc, docs/python.md), the harness's variables
WATCHED_ENV = re.compile(r"^(LD_|VALGRIND|PYTHONMALLOC|PETSC_OPTIONS|HPCBENCH|OMPI_MCA_|PMIX_MCA_)|vgpreload|valgrind"
                         r"|memcheck", re.I)
ENV_READERS = ("os.environ.get", "os.getenv", "os.environ.__getitem__", "os.environ.__contains__", "os.getenvb")


@dataclass
class PySourceFacts:
    file: str
    syntax_error: str = ""
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted module or object
    petsc_classes: set[str] = field(default_factory=set)  # PETSc.<X> named anywhere
    calls: list[tuple[str, int]] = field(default_factory=list)  # dotted callee as written, line
    init_with_argv: bool = False  # petsc4py.init(sys.argv ...)
    petsc_imported: bool = False
    shortcuts: list[str] = field(default_factory=list)  # "np.linalg.solve at main.py:12"
    tampering: list[str] = field(default_factory=list)
    destroyed: set[str] = field(default_factory=set)  # names whose .destroy() is called
    created: dict[str, int] = field(default_factory=dict)  # name -> line of a PETSc object made for it


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a Name/Attribute chain (calls along it written as `a.b().c`), else ""."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            parts.append("()")
            node = node.func
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        else:
            return ""
    return ".".join(reversed(parts)).replace(".()", "()")


def _resolve(name: str, imports: dict[str, str]) -> str:
    """A dotted name with its first part replaced by what it was imported as."""
    head, _, rest = name.partition(".")
    base = imports.get(head.removesuffix("()"), "")
    if not base:
        return name
    return base + ("()" if head.endswith("()") else "") + ("." + rest if rest else "")


def _imports(tree: ast.AST, facts: PySourceFacts) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                facts.imports[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                facts.imports[a.asname or a.name] = f"{node.module}.{a.name}"
                if node.module.startswith("petsc4py") and (a.name == "PETSc" or node.module == "petsc4py.PETSc"):
                    facts.petsc_imported = True


def _petsc_class(full: str) -> str:
    """"Vec" for petsc4py.PETSc.Vec().create..., "" when not a PETSc class."""
    prefix = "petsc4py.PETSc."
    if not full.startswith(prefix):
        return ""
    return full[len(prefix):].split(".")[0].split("(")[0]


def _call(node: ast.Call, facts: PySourceFacts) -> None:
    name = dotted(node.func)
    full = _resolve(name, facts.imports)
    facts.calls.append((full, node.lineno))
    where = f"{facts.file}:{node.lineno}"
    if full in ("petsc4py.init",) and any("sys.argv" in ast.unparse(a) for a in node.args):
        facts.init_with_argv = True
    if full.startswith(("numpy.linalg.", "numpy.dual.")) and full.rsplit(".", 1)[-1] in DENSE_SHORTCUTS:
        facts.shortcuts.append(f"{name} at {where}")
    method = full.rsplit(".", 1)[-1]
    if method in OPTION_WRITERS and ("Options" in full or full.endswith(("opts." + method, "options." + method))):
        text = " ".join(ast.unparse(a) for a in node.args)
        hit = [o for o in HARNESS_OPTIONS if o in text]
        if hit or method == "clear":
            facts.tampering.append(f"{name}({text[:60]}) at {where}: rewrites the options the harness gave PETSc"
                                   + (f" ({', '.join(hit)})" if hit else ""))
    if full.startswith(("os.environ", "os.putenv", "os.unsetenv")) and "PETSC" in ast.unparse(node):
        facts.tampering.append(f"{name} at {where}: changes PETSc's options through the environment")
    if method == "destroy" and isinstance(node.func, ast.Attribute):
        facts.destroyed.add(ast.unparse(node.func.value))


# PETSc names that are no object a program makes and destroys: the modules of functions and
# constants, the number types, the error; upper-case names are constants (COMM_WORLD, DECIDE)
NOT_OBJECTS = frozenset({"Sys", "Options", "Log", "ScalarType", "RealType", "ComplexType", "IntType", "Error"})


def _makes(call: ast.Call, facts: PySourceFacts) -> bool:
    """Whether a call returns a new PETSc object (or a tuple of them) its caller must destroy."""
    full = _resolve(dotted(call.func), facts.imports)
    method = full.rsplit(".", 1)[-1]
    cls = _petsc_class(full)
    # through mpi4py (`PETSc.COMM_WORLD.tompi4py().allreduce(...)`) a value or an MPI object comes back
    makes = (cls != "" and cls not in NOT_OBJECTS and not cls.isupper() and "tompi4py" not in full
             and not method.startswith("get") and method not in ("Print",))
    return makes or method in ("duplicate", "createGlobalVec", "createLocalVec", "createMatrix", "getVecs",
                               "createVecs", "toZero", "toAll")


def _assignments(tree: ast.AST, facts: PySourceFacts) -> None:
    """Names bound to a new PETSc object (`x = PETSc.Vec().create()`, `a, b = PETSc.Scatter.toZero(x)`,
    `b, u = da.createGlobalVec(), da.createGlobalVec()`, `y = x.duplicate()`). Not a value read
    through one (`t = PETSc.Options().getReal("t", 1.0)`, `pc = PETSc.KSP().create().getPC()`): a
    get returns a number or a borrowed object, as PETSc's C getters do, which the caller does not
    destroy."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                # one value per name: each name made by its own call
                pairs = list(zip(target.elts, node.value.elts, strict=False))
            elif isinstance(node.value, ast.Call):
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                pairs = [(t, node.value) for t in names]
            else:
                continue
            for t, value in pairs:
                if isinstance(t, ast.Name) and isinstance(value, ast.Call) and _makes(value, facts):
                    facts.created.setdefault(t.id, node.lineno)


def _env_lookup(node: ast.AST, facts: PySourceFacts) -> None:
    """`os.environ["PYTHONMALLOC"]`, `os.getenv("LD_PRELOAD")`, `"VALGRIND_LIB" in os.environ`: the
    program looks for what tells its watched runs from the others."""
    key, env = None, ""
    if isinstance(node, ast.Subscript):
        env, key = _resolve(dotted(node.value), facts.imports), node.slice
    elif isinstance(node, ast.Call) and node.args:
        env, key = _resolve(dotted(node.func), facts.imports), node.args[0]
        env = env if env in ENV_READERS else ""
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn):
        env, key = _resolve(dotted(node.comparators[0]), facts.imports), node.left
    if not env.startswith("os.environ") and env not in ENV_READERS:
        return
    if isinstance(key, ast.Constant) and isinstance(key.value, str) and WATCHED_ENV.search(key.value):
        line = getattr(node, "lineno", 0)
        facts.tampering.append(f"reads {key.value!r} from the environment at {facts.file}:{line}: looks for its "
                               "valgrind run or the harness's settings")


def analyse(file: str, source: str) -> PySourceFacts:
    facts = PySourceFacts(file)
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as e:
        facts.syntax_error = f"{file}:{e.lineno}: {e.msg}"
        return facts
    _imports(tree, facts)
    for node in ast.walk(tree):
        _env_lookup(node, facts)
        if isinstance(node, ast.Call):
            _call(node, facts)
        elif isinstance(node, ast.Attribute | ast.Name):
            cls = _petsc_class(_resolve(dotted(node), facts.imports))
            if cls:
                facts.petsc_classes.add(cls)
    _assignments(tree, facts)
    return facts


def missing_modules(modules: list[str], facts: list[PySourceFacts]) -> list[str]:
    """The problem's modules none of whose petsc4py classes or factories the program names."""
    used = {c for f in facts for c in f.petsc_classes}
    calls = {full for f in facts for full, _ in f.calls}
    out = []
    for module in modules:
        want = MODULE_CLASSES.get(module)
        if not want:
            continue
        named = any(w in used for w in want if "." not in w)
        via = any(full.endswith("." + w.split(".")[-1]) for w in want if "." in w for full in calls)
        if not named and not via:
            out.append(f"{module} (no PETSc.{want[0]})")
    return out


def undestroyed(facts: PySourceFacts) -> list[str]:
    """PETSc objects bound to a name whose .destroy() is never called: left to the garbage
    collector, which a C program's rules count as a leak. A `with` does not destroy one (petsc4py's
    Vec and IS give their arrays in a `with`; no PETSc object of 3.26 destroys itself on leaving it)."""
    return [f"{name} ({facts.file}:{line})" for name, line in sorted(facts.created.items(), key=lambda kv: kv[1])
            if name not in facts.destroyed]


def _petsc_call_lines(facts: PySourceFacts) -> set[int]:
    """Lines of calls into PETSc: through the module, or a method of an object it made."""
    return {line for full, line in facts.calls
            if full.startswith("petsc4py.") or full.split(".")[0].split("(")[0] in facts.created}


def _swallows(handler: ast.ExceptHandler) -> bool:
    """An except clause that catches PETSc's errors (bare, Exception, BaseException, PETSc.Error)
    and neither raises nor exits: the failure is hidden and the program goes on."""
    caught = "" if handler.type is None else ast.unparse(handler.type)
    broad = handler.type is None or any(w in caught for w in ("Exception", "BaseException", "Error"))
    ends = any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and dotted(n.func).endswith(
        ("exit", "Abort", "abort"))) for s in handler.body for n in ast.walk(s))
    return broad and not ends


def swallowed_calls(source: str, facts: PySourceFacts) -> tuple[int, list[int]]:
    """(PETSc calls, lines of those inside a try whose handler swallows PETSc's errors)."""
    petsc = _petsc_call_lines(facts)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return len(petsc), []
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_swallows(h) for h in node.handlers):
            lines = {n.lineno for s in node.body for n in ast.walk(s) if isinstance(n, ast.Call)}
            hidden |= lines & petsc
    return len(petsc), sorted(hidden)


def private_uses(source: str, file: str) -> list[str]:
    """petsc4py's private names used (`PETSc._x`, `petsc4py.lib`, Cython's `__pyx_*`): its
    implementation, which changes between releases, as PETSc's private headers do in C."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = dotted(node)
            if chain.startswith(("PETSc.", "petsc4py.")) and (node.attr.startswith("_") or chain.startswith(
                    "petsc4py.lib")) and not (node.attr.startswith("__") and node.attr.endswith("__")
                                              and not node.attr.startswith("__pyx")):
                out.append(f"{chain} at {file}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("petsc4py.lib"):
            out.append(f"from {node.module} import ... at {file}:{node.lineno}")
    return out


@dataclass
class PyParallel:
    comm_uses: list[dict] = field(default_factory=list)  # {"call", "comm", "line", "verdict"}
    ownership: list[str] = field(default_factory=list)  # ownership queries named
    writes: int = 0  # array or setValues writes into PETSc objects
    bare_prints: list[int] = field(default_factory=list)  # print() not under a rank test
    guarded_prints: int = 0
    parse_error: bool = False  # the source did not parse: nothing above was seen


def _rank_test(test: ast.AST) -> bool:
    text = ast.unparse(test)
    return "rank" in text.lower() or "getRank" in text


def parallel_facts(source: str, multi: bool) -> PyParallel:
    """What the C rules' check_parallel finds, in a petsc4py program's terms."""
    rep = PyParallel()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        rep.parse_error = True
        return rep
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _rank_test(node.test):
            guarded |= {n.lineno for s in node.body for n in ast.walk(s) if hasattr(n, "lineno")}
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(isinstance(t, ast.Subscript) for s in node.body
                                              for n in ast.walk(s) if isinstance(n, ast.Assign) for t in n.targets):
            rep.writes += 1  # `with x as a: a[...] = ...`: the Vec's local array written
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        method = name.rsplit(".", 1)[-1]
        for kw in node.keywords if method not in ("Print", "syncPrint", "syncFlush") else ():
            if kw.arg == "comm":
                comm = ast.unparse(kw.value)
                verdict = ("self_in_parallel" if multi and "COMM_SELF" in comm else
                           "mpi_comm_world" if "MPI.COMM_WORLD" in comm else "ok")
                rep.comm_uses.append({"call": name, "comm": comm, "line": node.lineno, "verdict": verdict})
        if method.startswith(("getOwnershipRange", "getCorners", "getGhostCorners", "getRanges", "getHeightStratum")):
            rep.ownership.append(method)
        if method in ("setValues", "setValue", "setValuesLocal", "setValuesStencil", "setArray", "getArray",
                      "getVecArray", "setValuesBlocked"):
            rep.writes += 1
        if name == "print":
            if node.lineno in guarded:
                rep.guarded_prints += 1
            else:
                rep.bare_prints.append(node.lineno)
    return rep
