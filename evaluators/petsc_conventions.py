"""The deterministic PETSc-convention checks, shared by the error-handling and
parallel-awareness evaluators and by `hpcbench lint`.

Everything here is a pure function of one C source (and, for error handling,
the API facts of a PETSc's headers, see hpcbench.petsc_headers): it walks the
tree-sitter-c syntax tree, classifies calls, and returns findings with line
and column, so the evaluators can score and the linter can print.

Finding codes (the first digit is the family):
    HB101 unchecked call of a function returning an error code
    HB102 legacy check (`ierr = F(...); CHKERRQ(ierr)`), credited partly
    HB103 wrong wrapper (PetscCallMPI around a PETSc call, PetscCall around MPI)
    HB201 MPI_COMM_WORLD where PETSC_COMM_WORLD belongs
    HB202 distributed object created on PETSC_COMM_SELF in a multi-rank program
    HB203 values set without any ownership-range query
    HB204 every value set by one rank (centralised assembly)
    HB205 communicating call inside a rank-guarded branch
    HB301 deprecated function or macro
    HB302 PetscErrorCode function using PetscCall without PetscFunctionBeginUser
    HB303 private PETSc header included (petsc/private/*, *impl.h)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Node, Query, QueryCursor

from hpcbench.evaluators.csource import LANGUAGE, syntax_tree
from hpcbench.petsc_headers import PetscApi

ERROR_HANDLING_CODES = ("HB101", "HB102", "HB103")

# Credit per call: PetscCall and kin are what current PETSc asks for; the legacy
# ierr/CHKERRQ form checks the code too but is deprecated and easy to get wrong
# (a CHKERRQ after an unbraced loop sees only the last iteration); a hand-written
# `if (F(...))` checks but loses PETSc's traceback; `(void)F(...)` is a decision
# to ignore (PETSc itself does so in void pointwise callbacks), not an oversight.
CREDIT = {"wrapped": 1.0, "propagated": 1.0, "manual": 0.8, "legacy": 0.6, "discarded": 0.5, "unchecked": 0.0}
LEGACY_CHECKS = ("CHKERRQ", "CHKERRA", "CHKERRV", "CHKERRMPI", "CHKERRABORT", "CHKERRXX", "CHKERRCONTINUE",
                 "CHKERRCXX", "CHKERRNULL")
# MPI functions that return something other than an error code.
MPI_NOT_ERRORCODE = re.compile(r"^P?MPI_(Wtime|Wtick|Abort|Aint_add|Aint_diff|\w+_f2c|\w+_c2f)$")
MPI_FUNC = re.compile(r"^P?MPI_[A-Z][A-Za-z0-9_]*$")
# Without header facts (an old campaign.h5, no PETSc for lint): PETSc-prefixed
# names minus the math and inline helpers that return values, at lower confidence.
FALLBACK_PREFIX = re.compile(r"^(Petsc|Vec|Mat|KSP|PC|SNES|TS|Tao|DM|IS|PetscSF|AO)[A-Z]\w*$")
FALLBACK_NOT = re.compile(r"^Petsc(Real|Imaginary|Abs|Sqrt|Sin|Cos|Tan|Exp|Log|Pow|Max|Min|Conj|Sign|Floor|Ceil|"
                          r"Atan|Asin|Acos|Sinh|Cosh|Tanh|Clip|IsInf|IsNan|IsNormal|Sqr|Cmplx|Unlikely|Likely|"
                          r"Defined|Call|Function|Check|Assert|Info|Options(Begin|End)|MPIInt|Int|Bool|Hypot|"
                          r"Erf|Fmod|Lg|Round)")


@dataclass(frozen=True)
class LintFinding:
    file: str
    line: int  # 1-based
    col: int  # 1-based
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.code} {self.message}"


@dataclass(frozen=True)
class ErrCall:
    """One call whose result is an error code, and how (or whether) it is checked."""

    file: str
    line: int
    col: int
    name: str
    kind: str  # petsc | mpi | user
    form: str  # wrapped | propagated | manual | legacy | unchecked | discarded
    how: str  # the wrapper or check used, e.g. PetscCall, CHKERRQ
    function: str  # enclosing function

    @property
    def credit(self) -> float:
        return CREDIT[self.form]


@dataclass
class ErrorHandlingReport:
    calls: list[ErrCall] = field(default_factory=list)
    findings: list[LintFinding] = field(default_factory=list)
    deprecated: list[dict] = field(default_factory=list)  # name, file, line, note
    functions_missing_begin: list[str] = field(default_factory=list)
    user_functions: list[str] = field(default_factory=list)
    parse_error: bool = False


def _text(n: Node | None) -> str:
    return n.text.decode("utf-8", errors="replace") if n is not None and n.text else ""


def _pos(n: Node) -> tuple[int, int]:
    return n.start_point[0] + 1, n.start_point[1] + 1


def _call_name(n: Node) -> str:
    fn = n.child_by_field_name("function")
    return _text(fn) if fn is not None and fn.type == "identifier" else ""


def _walk(n: Node):
    """Pre-order walk that skips `#if 0` blocks (dead code is not a finding)."""
    stack = [n]
    while stack:
        cur = stack.pop()
        yield cur
        if cur.type == "preproc_if" and _text(cur.child_by_field_name("condition")).strip() == "0":
            alt = cur.child_by_field_name("alternative")
            if alt is not None:
                stack.append(alt)
            continue
        stack.extend(reversed(cur.children))


def _enclosing_function(n: Node | None) -> Node | None:
    while n is not None and n.type != "function_definition":
        n = n.parent
    return n


def function_name(defn: Node) -> str:
    d = defn.child_by_field_name("declarator")
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
    return _text(d)


@dataclass
class SourceIndex:
    """One query over one source's tree (outside `#if 0`), its nodes grouped by
    type in source order. Every check reads these lists: walking the tree once
    per question was most of the scoring time (profile of `hpcbench score`,
    docs/store.md)."""

    root: Node
    by_type: dict[str, list[Node]]
    calls: list[tuple[Node, str]]  # call_expression nodes whose callee is a plain name, with the name

    def of(self, *types: str) -> list[Node]:
        """Nodes of these types in source order (on a tie, the type named first)."""
        if len(types) == 1:
            return self.by_type.get(types[0], [])
        return sorted((n for t in types for n in self.by_type.get(t, [])), key=lambda n: n.start_byte)


# The node types the checks ask about, collected by one tree-sitter query (the
# matching runs in C; a Python walk over every node was twice as slow).
INDEXED = ("call_expression", "identifier", "if_statement", "assignment_expression", "init_declarator",
           "function_definition", "declaration", "preproc_if")
_QUERY = Query(LANGUAGE, " ".join(f"({t}) @{t}" for t in INDEXED))


def _dead_ranges(ifs: list[Node]) -> list[tuple[int, int]]:
    """Byte ranges inside `#if 0` blocks, minus their #else branch: dead code is not a finding."""
    out = []
    for n in ifs:
        if _text(n.child_by_field_name("condition")).strip() != "0":
            continue
        alt = n.child_by_field_name("alternative")
        if alt is None:
            out.append((n.start_byte + 1, n.end_byte))
        else:
            out += [(n.start_byte + 1, alt.start_byte), (alt.end_byte, n.end_byte)]
    return out


@lru_cache(maxsize=64)
def index(source: str) -> SourceIndex:
    """Cached per source, so the error-handling and parallel checks of one file
    share one parse and one query (trees are never modified)."""
    root = syntax_tree(source).root_node
    found = QueryCursor(_QUERY).captures(root)
    dead = _dead_ranges(found.get("preproc_if", []))
    by_type: dict[str, list[Node]] = {}
    for t, nodes in found.items():
        live = [n for n in nodes if not any(lo <= n.start_byte < hi for lo, hi in dead)] if dead else nodes
        # source order, an enclosing node before the nodes it holds (the order of a pre-order walk)
        by_type[t] = sorted(live, key=lambda n: (n.start_byte, -n.end_byte))
    calls = [(c, name) for c in by_type.get("call_expression", []) if (name := _call_name(c))]
    return SourceIndex(root, by_type, calls)


def parse(source: str) -> Node:
    return index(source).root


def _next_statement(stmt: Node) -> Node | None:
    sib = stmt.next_named_sibling
    while sib is not None and sib.type == "comment":
        sib = sib.next_named_sibling
    return sib


def _mentions(var: str) -> re.Pattern:
    return re.compile(rf"(?<![\w.>]){re.escape(var)}(?!\w)")


def _checks_variable(stmt: Node | None, var: str) -> str:
    """The check the statement right after `var = F(...)` applies: a CHKERR*
    macro or PetscCall naming it ("legacy"), or an `if` testing it ("if")."""
    if stmt is None or not var:
        return ""
    mentions = _mentions(var)
    if stmt.type == "expression_statement" and stmt.named_children:
        e = stmt.named_children[0]
        if e.type == "call_expression":
            name = _call_name(e)
            if (name in LEGACY_CHECKS or name.startswith("PetscCall")) and mentions.search(
                    _text(e.child_by_field_name("arguments"))):
                return name
    if stmt.type == "if_statement" and mentions.search(_text(stmt.child_by_field_name("condition"))):
        return "if"
    return ""


def _tested_later(stmt: Node, var: str) -> bool:
    """Whether `var` is tested (in a condition, a ternary or a return) anywhere
    after `stmt` in its function: a deliberate hand-written check."""
    fdef = _enclosing_function(stmt)
    if fdef is None:
        return False
    mentions = _mentions(var)
    for n in _walk(fdef):
        if n.start_byte < stmt.end_byte:
            continue
        part = None
        if n.type in ("if_statement", "while_statement", "conditional_expression"):
            part = n.child_by_field_name("condition")
        elif n.type == "return_statement":
            part = n
        if part is not None and mentions.search(_text(part)):
            return True
    return False


def _after_assignment(stmt: Node, var: str) -> tuple[str, str]:
    how = _checks_variable(_next_statement(stmt), var)
    if how == "if":
        return "manual", "if"
    if how:
        return "legacy", how
    if _tested_later(stmt, var):
        return "manual", f"{var} tested later"
    return "unchecked", f"assigned to {var}, never checked"


def _look_through(call: Node) -> tuple[Node, Node | None]:
    """(node, parent) above the call, past parentheses, non-void casts and the branches of a
    ternary: PetscCall((PetscErrorCode)F(...)) and `return c ? F(...) : PETSC_SUCCESS` check F."""
    node, parent = call, call.parent
    while parent is not None:
        if parent.type == "parenthesized_expression":
            pass
        elif parent.type == "cast_expression" and _text(parent.child_by_field_name("type")).strip() != "void":
            pass
        elif parent.type == "conditional_expression" and parent.child_by_field_name("condition") != node:
            pass
        else:
            break
        node, parent = parent, parent.parent
    return node, parent


def _as_argument(outer: Node) -> tuple[str, str, Node]:
    w = _call_name(outer)
    if w.startswith("PetscCall"):
        return "wrapped", w, outer
    if w in LEGACY_CHECKS:
        return "legacy", w, outer
    if w in ("PetscFunctionReturn",):
        return "propagated", w, outer
    return "unchecked", f"passed as an argument of {w or 'an expression'}", outer


def _assigned(parent: Node, call: Node) -> tuple[str, str, Node]:
    left = parent.child_by_field_name("left")
    var = _text(left).strip()
    if left is not None and left.type == "pointer_expression":
        return "propagated", f"stored in {var} for the caller", call  # Fortran-style `*ierr = F(...)`
    stmt = parent.parent
    if stmt is not None and stmt.type == "expression_statement":
        if stmt.parent is not None and stmt.parent.type in ("for_statement", "while_statement", "do_statement"):
            return "unchecked", f"assigned to {var} in an unbraced loop body; a check after the loop " \
                                "sees only the last iteration", call
        form, how = _after_assignment(stmt, var)
        return form, how, call
    return "unchecked", f"assigned to {var}, never checked", call


def _initialised(parent: Node, call: Node) -> tuple[str, str, Node]:
    var = _text(parent.child_by_field_name("declarator")).strip()
    decl = parent.parent
    if decl is None:
        return "unchecked", f"assigned to {var}, never checked", call
    form, how = _after_assignment(decl, var)
    return form, how, call


def _in_condition(parent: Node, call: Node) -> tuple[str, str, Node]:
    """`if (F(...))` or `if (F(...) != PETSC_SUCCESS)` checks by hand; anything else does not."""
    up: Node | None = parent
    while up is not None and up.type in ("binary_expression", "unary_expression", "parenthesized_expression",
                                         "condition_clause"):
        up = up.parent
    if up is not None and up.type in ("if_statement", "while_statement") and parent.type != "expression_statement":
        return "manual", "if", call
    return "unchecked", "", call


def _classify(call: Node) -> tuple[str, str, Node]:
    """(form, how, wrapper-node) of one error-code call from where it sits in the tree."""
    node, parent = _look_through(call)
    if parent is None:
        return "unchecked", "", call
    if parent.type == "cast_expression":
        return "discarded", "(void)", call
    if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call_expression":
        return _as_argument(parent.parent)
    if parent.type == "return_statement":
        return "propagated", "return", parent
    if parent.type == "assignment_expression" and parent.child_by_field_name("right") == node:
        return _assigned(parent, call)
    if parent.type == "init_declarator" and parent.child_by_field_name("value") == node:
        return _initialised(parent, call)
    return _in_condition(parent, call)


def errorcode_names(api: PetscApi | None) -> tuple[set[str], bool]:
    """(names, exact): the header list when known, else an empty set and False
    (callers then use the prefix fallback)."""
    if api is not None and api.errorcode_functions:
        return api.errorcode_functions, True
    return set(), False


def _user_errorcode_functions(idx: SourceIndex) -> dict[str, Node | None]:
    """Functions this source defines or declares as returning PetscErrorCode."""
    out: dict[str, Node | None] = {}
    for n in idx.of("function_definition", "declaration"):
        if _text(n.child_by_field_name("type")) == \
                "PetscErrorCode":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "function_declarator":
                out.setdefault(_text(d.child_by_field_name("declarator")), None)
            elif n.type == "function_definition":
                out[function_name(n)] = n
        if n.type == "function_definition" and _text(n.child_by_field_name("type")) == "PetscErrorCode":
            out[function_name(n)] = n
    return out


def _call_kind(name: str, user: dict[str, Node | None], names: set[str], exact: bool) -> str:
    """user, mpi or petsc for a call whose result is an error code, else ""."""
    if name in user:
        return "user"
    if MPI_FUNC.match(name):
        return "" if MPI_NOT_ERRORCODE.match(name) else "mpi"
    if name in names or (not exact and FALLBACK_PREFIX.match(name) and not FALLBACK_NOT.match(name)):
        return "petsc"
    return ""


def _deprecated_use(rep: ErrorHandlingReport, file: str, n: Node, deprecated: dict[str, str],
                    seen: set[tuple[str, int]]) -> None:
    name = _text(n)
    if name in deprecated and (name, n.start_point[0]) not in seen:
        seen.add((name, n.start_point[0]))
        line, col = _pos(n)
        rep.deprecated.append({"name": name, "file": file, "line": line, "note": deprecated[name]})
        rep.findings.append(LintFinding(file, line, col, "HB301", f"{name} is {deprecated[name]}"))


def _error_call(rep: ErrorHandlingReport, file: str, n: Node, name: str, kind: str) -> None:
    fdef = _enclosing_function(n)
    if fdef is None:
        return  # file scope: a prototype tree-sitter read through an unknown macro, never executed
    form, how, _ = _classify(n)
    line, col = _pos(n)
    rep.calls.append(ErrCall(file, line, col, name, kind, form, how, function_name(fdef)))
    fix = "PetscCallMPI" if kind == "mpi" else "PetscCall"
    # where PetscCall could have been used: PetscErrorCode functions and main()
    returns_code = _text(fdef.child_by_field_name("type")) == "PetscErrorCode" or function_name(fdef) == "main"
    if form == "unchecked" or (form == "discarded" and returns_code):
        what = "MPI error code" if kind == "mpi" else "PetscErrorCode"
        detail = "explicitly discarded" if form == "discarded" else (how or "not checked")
        rep.findings.append(LintFinding(file, line, col, "HB101",
                                    f"{name} returns a {what} that is {detail}; wrap it in {fix}()"))
    elif form == "legacy":
        rep.findings.append(LintFinding(file, line, col, "HB102",
                                    f"legacy error check ({how}) of {name}; use {fix}({name}(...))"))
    elif form == "wrapped":
        if kind == "mpi" and not how.startswith("PetscCallMPI") and how not in ("PetscCallExternal",):
            rep.findings.append(LintFinding(file, line, col, "HB103",
                                        f"{how} around MPI function {name}: use PetscCallMPI"))
        elif kind != "mpi" and how.startswith("PetscCallMPI"):
            rep.findings.append(LintFinding(file, line, col, "HB103",
                                        f"{how} around PETSc function {name}: use PetscCall"))


def _missing_begin(rep: ErrorHandlingReport, file: str, user: dict[str, Node | None]) -> None:
    for fname, defn in sorted(user.items()):
        if defn is None:
            continue
        body = _text(defn.child_by_field_name("body"))
        if "PetscCall" in body and not re.search(r"\bPetscFunctionBegin(User|Hot)?\b", body):
            rep.functions_missing_begin.append(fname)
            line, col = _pos(defn)
            rep.findings.append(LintFinding(file, line, col, "HB302",
                                        f"{fname} returns PetscErrorCode and uses PetscCall but has no "
                                        "PetscFunctionBeginUser: error tracebacks skip it"))


def check_error_handling(file: str, source: str, api: PetscApi | None) -> ErrorHandlingReport:
    idx = index(source)
    rep = ErrorHandlingReport(parse_error=idx.root.has_error)
    names, exact = errorcode_names(api)
    user = _user_errorcode_functions(idx)
    rep.user_functions = sorted(user)
    deprecated = api.deprecated if api else {}
    seen_dep: set[tuple[str, int]] = set()
    call_names = dict((n.id, name) for n, name in idx.calls)
    # calls and (when the API names deprecated ones) identifiers, in source order: findings stay in it
    for n in idx.of("call_expression", "identifier") if deprecated else idx.of("call_expression"):
        if n.type == "identifier":
            _deprecated_use(rep, file, n, deprecated, seen_dep)
        elif (name := call_names.get(n.id, "")) and (kind := _call_kind(name, user, names, exact)):
            _error_call(rep, file, n, name, kind)
    _missing_begin(rep, file, user)
    return rep


# ----------------------------------------------------------------------------- parallel awareness

COMMS = ("PETSC_COMM_WORLD", "PETSC_COMM_SELF", "MPI_COMM_WORLD", "MPI_COMM_SELF")
# Creators of objects that are distributed when their communicator has several ranks.
DISTRIBUTED_CREATOR = re.compile(r"^(Vec|Mat|DM\w*|KSP|SNES|TS|Tao|PC|IS|PetscSF|PetscSection)\w*Create\w*$")
OWNERSHIP = {"VecGetOwnershipRange", "VecGetOwnershipRanges", "MatGetOwnershipRange", "MatGetOwnershipRanges",
             "MatGetOwnershipRangeColumn", "DMDAGetCorners", "DMDAGetGhostCorners", "DMDAGetLocalInfo",
             "DMStagGetCorners", "DMStagGetGhostCorners", "VecGetLocalSize", "MatGetLocalSize",
             "PetscSplitOwnership", "PetscLayoutGetRange", "DMPlexGetChart", "DMPlexGetHeightStratum",
             "DMPlexGetDepthStratum", "ISGetLocalSize", "DMDAGetElements", "DMSwarmGetLocalSize"}
# Setting values by global index: needs to know what this rank owns to scale.
SETTERS = {"VecSetValues", "VecSetValue", "VecSetValuesBlocked", "MatSetValues", "MatSetValue",
           "MatSetValuesBlocked", "MatSetValuesStencil", "VecSetValuesStencil", "DMStagVecSetValuesStencil",
           "DMStagMatSetValuesStencil", "MatSetValuesCOO", "MatSetPreallocationCOO"}
# Calls that communicate on the object's communicator: reached by some ranks only,
# they hang or fail.
COMMUNICATING = re.compile(
    r"^(Vec(Norm|Dot|TDot|MDot|Sum|Max|Min|AssemblyBegin|AssemblyEnd|View|Duplicate|Destroy|SetFromOptions|"
    r"ScatterBegin|ScatterEnd|ScatterCreate\w*|Create\w*|Copy|Equal)|"
    r"Mat(AssemblyBegin|AssemblyEnd|Mult\w*|View|Destroy|SetUp|SetFromOptions|Create\w*|Norm|Duplicate|Convert)|"
    r"(KSP|SNES|TS|Tao|PC)(Solve|SetUp|SetFromOptions|View|Destroy|Create)|"
    r"DM\w*(GlobalToLocal\w*|LocalToGlobal\w*|Create\w*|SetUp|SetFromOptions|Destroy|View)|"
    r"PetscBarrier|PetscSynchronizedFlush|"
    r"MPI_(Barrier|Allreduce|Bcast|Reduce|Allgather\w*|Gather\w*|Scatter\w*|Alltoall\w*|Comm_split|Comm_dup))$")
SEQUENTIAL_MAKERS = re.compile(r"^(VecScatterCreateToZero|VecScatterCreateToAll|\w*Seq\w*|VecCreateLocalVector|"
                               r"DMGetLocalVector|DMCreateLocalVector|VecGetSubVector)$")


@dataclass
class ParallelReport:
    comm_uses: list[dict] = field(default_factory=list)  # creator, comm, line, verdict
    setters: list[dict] = field(default_factory=list)  # name, line, guarded
    ownership_queries: list[dict] = field(default_factory=list)
    guarded_collectives: list[dict] = field(default_factory=list)
    rank_guards: int = 0
    sequential_vars: list[str] = field(default_factory=list)
    distributed_vars: list[str] = field(default_factory=list)
    findings: list[LintFinding] = field(default_factory=list)
    parse_error: bool = False


def _args(call: Node) -> list[Node]:
    al = call.child_by_field_name("arguments")
    return [c for c in al.named_children if c.type != "comment"] if al is not None else []


def _addr_vars(call: Node) -> list[str]:
    return [_text(a.child_by_field_name("argument")) for a in _args(call)
            if a.type == "pointer_expression" and _text(a).startswith("&")]


def _rank_vars(idx: SourceIndex) -> set[str]:
    """Variables filled by MPI_Comm_rank (the second argument's target)."""
    out = set()
    for n, name in idx.calls:
        if name == "MPI_Comm_rank":
            a = _args(n)
            if len(a) == 2 and a[1].type == "pointer_expression":
                out.add(_text(a[1].child_by_field_name("argument")))
    return out


def _guard_depth(n: Node, guards: set[int]) -> bool:
    p = n.parent
    while p is not None:
        if p.id in guards:
            return True
        p = p.parent
    return False


DERIVING = re.compile(r"^\w*(Create\w*|Duplicate|Clone|Convert|Get(Global\w*|KSP|SNES|PC|DM|Coarse\w*)|Refine|"
                      r"Coarsen)$")


def _world_comms(idx: SourceIndex) -> set[str]:
    """PETSC_COMM_WORLD, MPI_COMM_WORLD and variables set from them (`comm = PETSC_COMM_WORLD`)."""
    out = {"PETSC_COMM_WORLD", "MPI_COMM_WORLD"}
    for n in idx.of("assignment_expression", "init_declarator"):
        if n.type == "assignment_expression" and _text(n.child_by_field_name("right")).strip() in out:
            out.add(_text(n.child_by_field_name("left")).strip())
        elif n.type == "init_declarator" and _text(n.child_by_field_name("value")).strip() in out:
            out.add(_text(n.child_by_field_name("declarator")).strip())
    return out


def _object_kinds(idx: SourceIndex, world: set[str], guards: set[int]) -> tuple[set[str], set[str]]:
    """(sequential, distributed) variable names, followed through the source in
    order: created on PETSC_COMM_SELF or by a *Seq* creator is sequential; created
    on the world communicator, or derived (duplicated, created from, taken from)
    a distributed object outside a rank branch, is distributed. The vector
    VecScatterCreateToZero/ToAll returns is sequential, its scatter is not."""
    seq: set[str] = set()
    dist: set[str] = set()
    for c, name in idx.calls:
        args = _args(c)
        first = _text(args[0]).strip() if args else ""
        outs = _addr_vars(c)
        if not outs:
            continue
        if name.startswith("VecScatterCreateTo"):
            seq.add(outs[-1])
            if first in dist:
                dist.update(outs[:-1])
        elif SEQUENTIAL_MAKERS.match(name) or first in ("PETSC_COMM_SELF", "MPI_COMM_SELF"):
            seq.update(outs)
        elif _guard_depth(c, guards):
            continue  # made on some ranks only: what it is depends on a communicator we cannot see
        elif first in world and DISTRIBUTED_CREATOR.match(name):
            dist.update(outs)
        elif first in dist and DERIVING.match(name):
            dist.update(o for o in outs if o not in seq)
    return seq, dist - seq


def _rank_guards(idx: SourceIndex, rep: ParallelReport) -> set[int]:
    """Ids of the branches of `if`s whose condition names a rank variable."""
    ranks = _rank_vars(idx)
    guards: set[int] = set()
    if not ranks:
        return guards
    for n in idx.of("if_statement"):
        cond = _text(n.child_by_field_name("condition"))
        if any(re.search(rf"\b{re.escape(r)}\b", cond) for r in ranks):
            for part in ("consequence", "alternative"):
                b = n.child_by_field_name(part)
                if b is not None:
                    guards.add(b.id)
            rep.rank_guards += 1
    return guards


def _comm_use(rep: ParallelReport, file: str, c: Node, name: str, first: str, guarded: bool,
              multi_rank: bool | None) -> None:
    line, col = _pos(c)
    verdict = "ok"
    if first == "MPI_COMM_WORLD":
        verdict = "mpi_comm_world"
        rep.findings.append(LintFinding(file, line, col, "HB201",
                                    f"{name} on MPI_COMM_WORLD: use PETSC_COMM_WORLD, which PETSc may "
                                    "set to a sub-communicator"))
    elif (first in ("PETSC_COMM_SELF", "MPI_COMM_SELF") and DISTRIBUTED_CREATOR.match(name)
          and "Seq" not in name and multi_rank and not guarded):
        verdict = "self_in_parallel"
        rep.findings.append(LintFinding(file, line, col, "HB202",
                                    f"{name} on {first} in a program run on several ranks: every rank "
                                    "builds and solves the whole problem redundantly"))
    if DISTRIBUTED_CREATOR.match(name):
        rep.comm_uses.append({"call": name, "comm": first, "line": line, "verdict": verdict})


def _guarded_collective(rep: ParallelReport, file: str, c: Node, name: str, first: str,
                        on_objects: set[str]) -> None:
    on = next((o for o in [first] + _addr_vars(c)[:1] if o in on_objects), "")
    if on:
        line, col = _pos(c)
        rep.guarded_collectives.append({"call": name, "line": line, "object": on})
        rep.findings.append(LintFinding(file, line, col, "HB205",
                                    f"{name}({on}, ...) communicates on a distributed object but runs "
                                    "inside a branch on the rank: the other ranks never reach it "
                                    "(hang or error at N ranks)"))


def _ownership_findings(rep: ParallelReport, file: str, multi_rank: bool | None) -> None:
    # Without knowing the rank counts (lint) the ownership heuristics stay quiet:
    # a serial tutorial setting every entry is right.
    if rep.setters and multi_rank and not rep.ownership_queries:
        s = rep.setters[0]
        if all(x["guarded"] for x in rep.setters):
            rep.findings.append(LintFinding(file, s["line"], 1, "HB204",
                                        f"{s['call']}: one rank sets every value of a distributed object "
                                        "(assembly does not scale; use the ownership range on every rank)"))
        else:
            rep.findings.append(LintFinding(file, s["line"], 1, "HB203",
                                        f"{s['call']} sets values but the program never asks which rows this "
                                        "rank owns (VecGetOwnershipRange, DMDAGetCorners ...)"))


def check_parallel(file: str, source: str, multi_rank: bool | None) -> ParallelReport:
    """`multi_rank`: True when the problem runs this program on several ranks,
    False when it is serial by design, None when unknown (lint): then only what
    is wrong at any rank count is reported."""
    idx = index(source)
    rep = ParallelReport(parse_error=idx.root.has_error)
    guards = _rank_guards(idx, rep)
    world = _world_comms(idx)
    seq, dist = _object_kinds(idx, world, guards)
    rep.sequential_vars = sorted(seq)
    rep.distributed_vars = sorted(dist)
    for c, name in idx.calls:
        if _enclosing_function(c) is None:
            continue
        args = _args(c)
        first = _text(args[0]).strip() if args else ""
        guarded = _guard_depth(c, guards)
        if first in COMMS and (DISTRIBUTED_CREATOR.match(name) or name.startswith("Petsc")):
            _comm_use(rep, file, c, name, first, guarded, multi_rank)
        if name in OWNERSHIP:
            rep.ownership_queries.append({"call": name, "line": _pos(c)[0]})
        if name in SETTERS:
            target = _text(args[1] if name.startswith("DMStag") and len(args) > 1 else args[0]).strip() \
                if args else ""
            if target not in seq:
                rep.setters.append({"call": name, "line": _pos(c)[0], "target": target, "guarded": guarded,
                                    "distributed": target in dist})
        if guarded and COMMUNICATING.match(name):
            _guarded_collective(rep, file, c, name, first, dist | world)
    _ownership_findings(rep, file, multi_rank)
    return rep


# PETSc's public interface is the top-level headers (include/petsc.h: "This include file
# allows you to use ANY public PETSc function"); include/petsc/private and the *impl.h
# headers are its implementation, changed between releases without deprecation.
PRIVATE_HEADERS = ("petsc/private/", "petsc-private/", "petscimpl.h")


def is_private_header(path: str) -> bool:
    return path.startswith(PRIVATE_HEADERS) or (path.startswith("petsc") and path.endswith("impl.h"))


def check_public_api(file: str, source: str) -> list[LintFinding]:
    """HB303 for each private PETSc header the source includes."""
    root = syntax_tree(source).root_node
    out = []
    for node in QueryCursor(_INCLUDES).captures(root).get("path", []):
        path = _text(node).strip('<>"')
        if is_private_header(path):
            line, col = _pos(node)
            out.append(LintFinding(file, line, col, "HB303",
                               f"includes the private PETSc header {path}: PETSc's implementation, which "
                               "changes between releases without deprecation (use the public headers)"))
    return sorted(out, key=lambda f: (f.line, f.col))


_INCLUDES = Query(LANGUAGE, "(preproc_include path: (_) @path)")

