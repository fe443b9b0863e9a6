"""Gate: the program uses PETSc's API as a PETSc program must.

From the parsed C source: main() brackets its PETSc work between
PetscInitialize and PetscFinalize, the PETSc objects the problem's module calls
for are actually created (a "TS" problem solved with a hand-written loop fails
here), and nothing tampers with what measures the program
(evaluators/harness_tampering.py: its HB40x findings fail the gate, its HB45x
ones are shown as evidence). Private headers are a matter of practice, not of a
working program (PETSc's own tutorials include some): the public_api evaluator
scores them."""

from __future__ import annotations

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.csource import Call, SourceFacts, analyse_source, is_petsc_call
from hpcbench.evaluators.harness_tampering import failing, scan_source
from hpcbench.evaluators.petsc_conventions import is_private_header
from hpcbench.evaluators.pysource import analyse, missing_modules

# Calls that show a module is really used; any one of them counts, and so does any call
# whose name starts with one of the module's MODULE_CONSTRUCTORS (every PetscFECreate*,
# DMPlexCreate* ... of the headers: a list of names misses the newer ones, such as
# PetscFECreateLagrangeByCell, which PETSc 3.26's tutorials use).
MODULE_CALLS: dict[str, tuple[str, ...]] = {
    "Tao": ("TaoCreate",),
    "TS": ("TSCreate",),
    "SNES": ("SNESCreate",),
    "KSP": ("KSPCreate", "SNESCreate", "SNESGetKSP", "TSGetSNES"),
    "Vec": ("VecCreate", "VecCreateMPI", "VecCreateSeq", "VecDuplicate", "DMCreateGlobalVector",
            "VecCreateMPICUDA", "VecCreateMPIKokkos", "VecCreateMPIWithArray"),
    "VecScatter": ("VecScatterCreate", "VecScatterCreateToZero", "VecScatterCreateToAll"),
    "DMDA": ("DMDACreate1d", "DMDACreate2d", "DMDACreate3d", "DMDACreate"),
    "DMPlex": ("DMPlexCreateBoxMesh", "DMPlexCreate", "DMPlexCreateFromFile", "DMPlexCreateFromCellListPetsc"),
    "DMStag": ("DMStagCreate1d", "DMStagCreate2d", "DMStagCreate3d"),
    "PetscFE": ("PetscFECreateDefault", "PetscFECreateLagrange", "PetscFECreate", "PetscFECreateByCell"),
    "CUDA": ("VecCUDAGetArray", "VecCUDAGetArrayWrite", "VecCUDAGetArrayRead", "VecCreateMPICUDA"),
    "Kokkos": ("VecGetKokkosView", "VecGetKokkosViewWrite", "VecCreateMPIKokkos"),
}
MODULE_CONSTRUCTORS: dict[str, tuple[str, ...]] = {
    "TS": ("TSCreate",), "Tao": ("TaoCreate",), "SNES": ("SNESCreate",), "KSP": ("KSPCreate",),
    "Vec": ("VecCreate", "VecDuplicate"), "VecScatter": ("VecScatterCreate",), "DMDA": ("DMDACreate",),
    "DMPlex": ("DMPlexCreate",), "DMStag": ("DMStagCreate",), "PetscFE": ("PetscFECreate",),
}
# Objects created generically and given their type afterwards (the DMPlex idiom of
# PETSc's own tutorials: DMCreate, DMSetType(dm, DMPLEX), DMSetFromOptions).
MODULE_TYPES: dict[str, tuple[tuple[str, ...], str]] = {
    "DMPlex": (("DMSetType", "DMConvert"), "DMPLEX"),
    "DMDA": (("DMSetType",), "DMDA"),
    "DMStag": (("DMSetType",), "DMSTAG"),
}
INIT = ("PetscInitialize", "PetscInitializeNoArguments", "PetscInitializeNoPointers")


@register
class ApiUsage(Evaluator):
    name = "api_usage"
    stage = "gate"
    category = "library"
    order = 40

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.language == "python":
            return self._python(ctx)
        srcs = ctx.c_sources()
        if not srcs:
            return self.unscored("no C sources to parse")
        facts = [analyse_source(n, s) for n, s in sorted(srcs.items())]
        problems = _bracketing(facts)
        private = [f"{f.file}: {inc}" for f in facts for inc in f.includes if is_private_header(inc)]
        # Device code (.cu, .kokkos.cxx) is among the facts: not C, but tree-sitter recovers the
        # calls in it, which is all the module check needs.
        missing = _missing_modules(ctx, [c for f in facts for c in f.calls])
        if missing:
            problems.append(f"does not use the module the problem calls for: {'; '.join(missing)}")
        tamper = [t for n, s in sorted(srcs.items()) for t in scan_source(n, s)]  # every suffix (a .hpp too)
        bad = failing(tamper)
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            problems.append(f"tampers with the harness: {bad[0]}{more}")
        parse_errors = [f.file for f in facts if f.has_errors]
        evidence = {"files": sorted(srcs), "includes": sorted({i for f in facts for i in f.includes}),
                    "private_includes": private,
                    "petsc_calls": len([1 for f in facts for c in f.calls if is_petsc_call(c.name)]),
                    "parse_errors": parse_errors, "harness_tampering": [str(t) for t in tamper[:20]]}
        # A source the parser could not fully read (macro tricks) lowers certainty, not the verdict.
        confidence = 0.8 if parse_errors else 1.0
        if problems:
            return self.gate(False, "; ".join(problems), confidence=confidence, evidence=evidence)
        headers = (f"; private headers included ({len(private)}: a finding of public_api, not of this gate)"
                   if private else ", public headers only")
        return self.gate(True, "PetscInitialize/PetscFinalize bracket main" + headers + ", uses "
                         + ", ".join(ctx.problem.modules), confidence=confidence, evidence=evidence)


    def _python(self, ctx: EvalContext) -> EvalResult:
        """A petsc4py program: PETSc reads its command line, it uses the problem's classes, solves
        nothing with numpy's dense solvers and leaves the harness's options alone."""
        srcs = ctx.py_sources()
        facts = [analyse(n, s) for n, s in sorted(srcs.items())]
        problems = [f.syntax_error for f in facts if f.syntax_error]
        if not any(f.init_with_argv for f in facts):
            problems.append("petsc4py.init(sys.argv) is never called: PETSc never reads the command line "
                            "(the task's options and the harness's)")
        missing = missing_modules(ctx.problem.modules, facts)
        if missing:
            problems.append(f"does not use the module the problem calls for: {'; '.join(missing)}")
        shortcuts = [s for f in facts for s in f.shortcuts]
        if shortcuts:
            problems.append(f"solves with numpy instead of PETSc: {shortcuts[0]}")
        tamper = [t for f in facts for t in f.tampering]
        if tamper:
            problems.append(f"tampers with the harness: {tamper[0]}")
        evidence = {"files": sorted(srcs), "language": "python",
                    "petsc_classes": sorted({c for f in facts for c in f.petsc_classes}),
                    "numpy_shortcuts": shortcuts[:10], "harness_tampering": tamper[:10]}
        if problems:
            return self.gate(False, "; ".join(problems), evidence=evidence)
        return self.gate(True, "petsc4py.init(sys.argv) gives PETSc the command line; uses "
                         + ", ".join(ctx.problem.modules), evidence=evidence)


def _bracketing(facts: list[SourceFacts]) -> list[str]:
    """main() brackets its PETSc work between PetscInitialize and PetscFinalize."""
    mains = [f for f in facts if "main" in f.functions]
    if len(mains) != 1:
        return [f"expected one main(), found {len(mains)}"]
    mf = mains[0]
    in_main = [c for c in mf.calls if c.function == "main"]
    inits = [c for c in in_main if c.name in INIT]
    fins = [c for c in in_main if c.name == "PetscFinalize"]
    petsc = [c for c in in_main if is_petsc_call(c.name) and c.name not in INIT and c.name != "PetscFinalize"]
    problems = []
    if not inits:
        problems.append("main() never calls PetscInitialize")
    if not fins:
        problems.append("main() never calls PetscFinalize")
    if inits and petsc and petsc[0].byte < inits[0].byte:
        problems.append(f"{petsc[0].name} at {mf.file}:{petsc[0].line} is called before PetscInitialize")
    if fins and petsc and petsc[-1].byte > fins[-1].byte:
        problems.append(f"{petsc[-1].name} at {mf.file}:{petsc[-1].line} is called after PetscFinalize")
    return problems


def _missing_modules(ctx: EvalContext, all_calls: list[Call]) -> list[str]:
    names = {c.name for c in all_calls}
    missing = []
    for module in ctx.problem.modules:
        want = MODULE_CALLS.get(module)
        setters, type_name = MODULE_TYPES.get(module, ((), ""))
        typed = any(c.name in setters and type_name in c.args for c in all_calls)
        built = any(n.startswith(MODULE_CONSTRUCTORS.get(module, ("\0",))) for n in names)
        if want and not typed and not built and not names.intersection(want):
            missing.append(f"{module} (none of {', '.join(want[:3])}...)")
    return missing
