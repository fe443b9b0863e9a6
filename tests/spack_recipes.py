"""Spack's package recipes read without Spack: the variants each declares and its conflicts,
for checking the site environments in spack/ against the real spack-packages repository.

Spack itself is not installed here; its recipes are Python classes whose directives
(`version`, `variant`, `conflicts`, inside `with when(...)` blocks and loops over class
constants) are read from their syntax tree. Expressions are evaluated only where they are
literal or built from literals (tuples, dicts, f-strings, `Base.constant`); what cannot be
evaluated is left out and said so (`Recipe.unread`), never guessed.

A spec string is read in the subset the environments and the recipes' conditions use:
`name@version +v ~v v=val ^dep... %compiler`. A condition is decided three ways (True,
False, None for unknown): a conflict is reported only when both its spec and its `when`
are True for the environment's spec, with the recipe's defaults for variants it leaves out."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

# ----------------------------------------------------------------------------- specs


@dataclass
class Node:
    name: str = ""
    version: str = ""  # "3.26.1", "=3.26.1", ":3.22", "4.5:", "3.21"
    variants: dict[str, str] = field(default_factory=dict)  # "true"/"false" for +/~, else the value


@dataclass
class Spec:
    root: Node
    deps: dict[str, Node] = field(default_factory=dict)  # ^dep and %compiler


TOKEN = re.compile(r"\s*(\^|%%|%|@=?[^\s+~^%]*|\+\+?[\w-]+|~~?[\w-]+|[\w-]+==?[^\s^%]*|[\w.-]+)")


def parse_spec(text: str, default_name: str = "") -> Spec:
    spec = Spec(Node())
    node = spec.root
    pos, pending = 0, ""
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read spec {text!r} at {text[pos:]!r}")
        tok, pos = m.group(1), m.end()
        if tok in ("^", "%", "%%"):
            pending = tok
            continue
        if pending or (not node.name and re.fullmatch(r"[a-z][\w.-]*", tok) and "=" not in tok
                       and tok not in ("true", "false")):
            if pending:
                node = spec.deps.setdefault(tok, Node(tok))
                pending = ""
            elif default_name and tok != default_name and node is spec.root and not spec.root.variants \
                    and not spec.root.version:
                node = spec.deps.setdefault(tok, Node(tok))  # a conflict naming another package: its dependency
            else:
                node.name = tok
            continue
        if tok.startswith("@"):
            node.version = tok[1:]
        elif tok[0] in "+~":
            node.variants[tok.lstrip("+~")] = "true" if tok[0] == "+" else "false"
        elif "=" in tok:
            k, _, v = tok.replace("==", "=").partition("=")
            node.variants[k] = v
    if not spec.root.name:
        spec.root.name = default_name
    return spec


def _vtuple(v: str) -> tuple:
    """A version's parts, comparable: numbers as numbers; a named version (main, develop) above all."""
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.\-]", v) if x)


def version_satisfies(have: str, want: str) -> bool | None:
    """Is concrete version `have` within `want` (Spack ranges: "3.21" = 3.21.*, "=3.26.1",
    "lo:hi", ":hi", "lo:"; comma-separated alternatives)?"""
    if not want:
        return True
    if not have:
        return None
    h = _vtuple(have.lstrip("="))
    for alt in want.split(","):
        alt = alt.strip()
        if alt.startswith("="):
            if h == _vtuple(alt[1:]):
                return True
            continue
        if ":" in alt:
            lo, _, hi = alt.partition(":")
            ok_lo = not lo or h >= _vtuple(lo)
            ok_hi = not hi or h[:len(_vtuple(hi))] <= _vtuple(hi)
            if ok_lo and ok_hi:
                return True
            continue
        if h[:len(_vtuple(alt))] == _vtuple(alt):
            return True
    return False


# ----------------------------------------------------------------------------- recipes


class Unknown(Exception):
    """An expression that is not built from literals."""


@dataclass
class Variant:
    name: str
    default: str
    values: tuple[str, ...] | None  # None: any value (or not readable)
    when: list[str]  # conditions, all of which must hold


@dataclass
class Recipe:
    name: str
    versions: set[str] = field(default_factory=set)
    variants: list[Variant] = field(default_factory=list)
    conflicts: list[tuple[str, list[str], str]] = field(default_factory=list)  # (spec, conditions, msg)
    unread: list[str] = field(default_factory=list)

    def variant(self, name: str) -> list[Variant]:
        return [v for v in self.variants if v.name == name]


def _norm(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class RecipeReader:
    """Reads package.py files (and the build-system classes they derive from) of one checkout."""

    def __init__(self, root: Path):
        self.root = root  # .../repos (holding spack_repo/builtin)
        self._classes: dict[str, tuple[dict, Recipe]] = {}

    def module_file(self, module: str) -> Path:
        return self.root / (module.replace(".", "/") + ".py")

    def package_file(self, name: str) -> Path:
        return self.root / "spack_repo" / "builtin" / "packages" / name.replace("-", "_") / "package.py"

    def recipe(self, name: str) -> Recipe:
        path = self.package_file(name)
        if not path.is_file():
            raise FileNotFoundError(f"spack-packages has no recipe {name!r} ({path})")
        env, rec = self._read_class(path, "".join(w.capitalize() for w in re.split(r"[-_]", name)))
        rec.name = name
        return rec

    def _read_class(self, path: Path, class_name: str | None) -> tuple[dict, Recipe]:
        key = f"{path}:{class_name}"
        if key in self._classes:
            return self._classes[key]
        tree = ast.parse(path.read_text(), str(path))
        imports: dict[str, str] = {}
        module_env: dict = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("spack_repo."):
                for a in node.names:
                    imports[a.asname or a.name] = node.module
            elif isinstance(node, ast.Assign):
                try:
                    value = self._eval(node.value, module_env)
                except Unknown:
                    continue
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        module_env[t.id] = value
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        cls = next((c for c in classes if c.name == class_name), None)
        rec = Recipe(class_name or "")
        env = dict(module_env)
        if cls is None:
            self._classes[key] = (env, rec)
            return env, rec
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in imports:
                mod_file = self.module_file(imports[base.id])
                if mod_file.is_file():
                    benv, brec = self._read_class(mod_file, base.id)
                    env[base.id] = benv
                    env.update({k: v for k, v in benv.items() if k not in env})
                    rec.versions |= brec.versions
                    rec.variants += brec.variants
                    rec.conflicts += brec.conflicts
        own_env: dict = {}
        self._body(cls.body, {**env, "__own__": own_env}, rec, [])
        env.update(own_env)
        self._classes[key] = (env, rec)
        return env, rec

    # -- statements
    def _body(self, body: list[ast.stmt], env: dict, rec: Recipe, when: list[str]) -> None:
        for st in body:
            try:
                self._stmt(st, env, rec, when)
            except Unknown as e:
                rec.unread.append(f"line {st.lineno}: {e}")

    def _stmt(self, st: ast.stmt, env: dict, rec: Recipe, when: list[str]) -> None:
        if isinstance(st, ast.Assign):
            try:
                value = self._eval(st.value, env)
            except Unknown:
                return
            for t in st.targets:
                if isinstance(t, ast.Name):
                    env[t.id] = value
                    env["__own__"][t.id] = value
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            self._directive(st.value, env, rec, when)
        elif isinstance(st, ast.With):
            cond = list(when)
            for item in st.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "when":
                    cond.append(str(self._eval(call.args[0], env)))
            self._body(st.body, env, rec, cond)
        elif isinstance(st, ast.For):
            for item in self._eval(st.iter, env):
                self._bind(st.target, item, env)
                self._body(st.body, env, rec, when)
        elif isinstance(st, ast.If):
            try:
                branch = st.body if self._eval(st.test, env) else st.orelse
                self._body(branch, env, rec, when)
            except Unknown:
                self._body(st.body, env, rec, when)
                self._body(st.orelse, env, rec, when)

    def _bind(self, target: ast.expr, value, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple):
            for t, v in zip(target.elts, value, strict=True):
                self._bind(t, v, env)
        else:
            raise Unknown("loop target")

    def _directive(self, call: ast.Call, env: dict, rec: Recipe, when: list[str]) -> None:
        name = call.func.id if isinstance(call.func, ast.Name) else ""
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if name == "version" and call.args:
            rec.versions.add(str(self._eval(call.args[0], env)))
        elif name == "variant" and call.args:
            vname = str(self._eval(call.args[0], env))
            default = _norm(self._eval(kw["default"], env)) if "default" in kw else "false"
            values = None
            if "values" in kw:
                try:
                    got = self._eval(kw["values"], env)
                    values = tuple(_norm(v) for v in got) if isinstance(got, (tuple, list, set)) else None
                except Unknown:
                    values = None
            elif "default" in kw and isinstance(self._eval(kw["default"], env), bool):
                values = ("true", "false")
            extra = self._eval(kw["when"], env) if "when" in kw else None
            rec.variants.append(Variant(vname, default, values, [*when, *([str(extra)] if extra else [])]))
        elif name == "conflicts" and call.args:
            spec = str(self._eval(call.args[0], env))
            cond = list(when)
            if len(call.args) > 1:
                cond.append(str(self._eval(call.args[1], env)))
            extra = self._eval(kw["when"], env) if "when" in kw else None
            if extra:
                cond.append(str(extra))
            msg = ""
            if "msg" in kw:
                try:
                    msg = str(self._eval(kw["msg"], env))
                except Unknown:
                    msg = "(message not read)"
            rec.conflicts.append((spec, cond, msg))

    # -- expressions
    def _eval(self, node: ast.expr, env: dict):  # noqa: C901 - one case per expression kind
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    out += list(self._eval(e.value, env))
                else:
                    out.append(self._eval(e, env))
            return tuple(out) if not isinstance(node, ast.Set) else set(out)
        if isinstance(node, ast.Dict):
            return {self._eval(k, env): self._eval(v, env) for k, v in zip(node.keys, node.values, strict=True)
                    if k is not None}
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            raise Unknown(node.id)
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value, env)
            if isinstance(base, dict) and node.attr in base:
                return base[node.attr]
            raise Unknown(ast.unparse(node))
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if isinstance(node.op, ast.Add):
                return tuple(left) + tuple(right) if isinstance(left, (tuple, list)) else left + right
            if isinstance(node.op, ast.Mod) and isinstance(left, str):
                return left % right
            raise Unknown(ast.unparse(node))
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self._eval(v.value, env)) if isinstance(v, ast.FormattedValue)
                           else str(v.value) for v in node.values)  # type: ignore[attr-defined]
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._eval(node.left, env), self._eval(node.comparators[0], env)
            if isinstance(node.ops[0], ast.In):
                return left in right
            if isinstance(node.ops[0], ast.NotIn):
                return left not in right
            if isinstance(node.ops[0], ast.Eq):
                return left == right
            raise Unknown(ast.unparse(node))
        if isinstance(node, ast.Call):
            return self._call(node, env)
        raise Unknown(ast.unparse(node))

    def _call(self, node: ast.Call, env: dict):
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("keys", "values", "items") and not node.args:
            base = self._eval(node.func.value, env)
            if isinstance(base, dict):
                return tuple(getattr(base, node.func.attr)())
        if isinstance(node.func, ast.Attribute) and node.func.attr == "format" and isinstance(node.func.value,
                                                                                               ast.Constant):
            return node.func.value.value.format(*[self._eval(a, env) for a in node.args])
        fname = node.func.id if isinstance(node.func, ast.Name) else ""
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args += list(self._eval(a.value, env))
            else:
                args.append(self._eval(a, env))
        if fname in ("tuple", "list", "sorted") and len(args) == 1:
            return tuple(sorted(args[0]) if fname == "sorted" else args[0])
        if fname in ("any_combination_of", "auto_or_any_combination_of"):
            return tuple(args)
        if fname == "disjoint_sets":
            return tuple(v for group in args for v in group)
        raise Unknown(ast.unparse(node))


# ----------------------------------------------------------------------------- checking


@dataclass
class Known:
    """What an environment says of its packages: the spec's own nodes, plus requirements and
    externals from its `packages:` section (versions, variants, compilers)."""

    nodes: dict[str, Node]

    def node(self, name: str) -> Node | None:
        return self.nodes.get(name)


def _holds(cond: Spec, pkg: str, rec: Recipe, known: Known, root: Node) -> bool | None:
    """Does the condition (a spec) hold for package `pkg` whose node is `root`?"""
    results: list[bool | None] = [_node_holds(cond.root, root, rec)]
    for name, want in cond.deps.items():
        have = known.node(name)
        results.append(None if have is None else _node_holds(want, have, None))
    if any(r is False for r in results):
        return False
    return None if any(r is None for r in results) else True


def _node_holds(want: Node, have: Node, rec: Recipe | None) -> bool | None:
    out: list[bool | None] = []
    if want.version:
        out.append(version_satisfies(have.version.lstrip("="), want.version))
    for k, v in want.variants.items():
        got = have.variants.get(k)
        if got is None and rec is not None:
            defaults = rec.variant(k)
            got = defaults[0].default if defaults else None
        if got is None:
            out.append(None)
        elif v in ("true", "false"):
            out.append(got == v)
        else:
            out.append(set(v.split(",")) <= set(got.split(",")))
    if any(r is False for r in out):
        return False
    return None if any(r is None for r in out) else True


def check_node(reader: RecipeReader, node: Node, known: Known, extra_versions: set[str] = frozenset()
               ) -> list[str]:  # type: ignore[assignment]
    """Problems of one package node against its recipe: unknown version, unknown or inapplicable
    variant, a value the variant does not take, a conflict it triggers."""
    rec = reader.recipe(node.name)
    out = []
    v = node.version.lstrip("=")
    if v and not any(version_satisfies(x, node.version) for x in rec.versions | set(extra_versions)):
        out.append(f"{node.name}@{node.version}: no such version in the recipe")
    for k, val in node.variants.items():
        decls = rec.variant(k)
        if not decls:
            out.append(f"{node.name}: no variant {k!r} in the recipe")
            continue
        applicable = [d for d in decls if all(_holds(parse_spec(c, node.name), node.name, rec, known, node)
                                               is not False for c in d.when)]
        if not applicable:
            out.append(f"{node.name}: variant {k!r} does not apply here (when {decls[0].when})")
            continue
        allowed = [d.values for d in applicable]
        if all(a is not None for a in allowed) and not any(set(val.split(",")) <= set(a) for a in allowed if a):
            out.append(f"{node.name}: variant {k}={val} is not one of {sorted(set().union(*allowed))}")
    for spec, conds, msg in rec.conflicts:
        parts = [spec, *conds]
        verdicts = [_holds(parse_spec(p, node.name), node.name, rec, known, node) for p in parts]
        if all(x is True for x in verdicts):
            out.append(f"{node.name}: conflicts({spec!r}, when={conds}){': ' + msg if msg else ''}")
    return out
