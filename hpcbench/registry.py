"""One way to extend every kind of part: evaluators, executors (schedulers) and agent kinds.

In the tree a class registers itself with a decorator made by `Registry.part` (each kind's
module names it: `@register_executor("slurm")`, `@register_scheduler("pbs")`,
`@register_launcher("srun")`); an installed package adds one through an entry-point group,
the way submitit loads its executors:

    [project.entry-points."hpcbench.executors"]
    lsf = "hpcbench_lsf:LsfExecutor"

Entry points are loaded on the first lookup that needs them (a name not found in the
tree, or the full list), so a command that uses only in-tree parts imports no plugin."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar, cast

from hpcbench.errors import HpcbenchError

T = TypeVar("T")
C = TypeVar("C", bound=type)


class Registry(Generic[T]):
    """Parts of one kind by name: the in-tree ones, then those of the entry-point group."""

    def __init__(self, kind: str, group: str, discover: Callable[[], None] | None = None):
        self.kind, self.group = kind, group
        self._discover = discover  # imports the in-tree modules that register themselves
        self._parts: dict[str, T] = {}
        self._plugins_loaded = False
        self._discovered = False

    def part(self, name: str, attr: str = "name") -> Callable[[C], C]:
        """Class decorator: the class is this kind's part `name`, which it also learns (its
        `attr`). The decorated class comes back as itself, so its subclass type is kept; each
        kind's typed alias (e.g. register_executor) bounds which classes it takes."""

        def deco(cls: C) -> C:
            setattr(cls, attr, name)
            self.add(name, cast(T, cls))
            return cls

        return deco

    def add(self, name: str, obj: T, origin: str = "") -> None:
        old = self._parts.get(name)
        if old is not None and old is not obj:
            where = f" (from {origin})" if origin else ""
            raise HpcbenchError(f"two {self.kind}s named {name!r}{where}: {_qualname(old)} and {_qualname(obj)}")
        self._parts[name] = obj

    def get(self, name: str) -> T | None:
        self._load_tree()
        if name not in self._parts:
            self.load_plugins()
        return self._parts.get(name)

    def names(self) -> list[str]:
        return sorted(self.all())

    def all(self) -> dict[str, T]:
        self._load_tree()
        self.load_plugins()
        return dict(self._parts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _load_tree(self) -> None:
        if not self._discovered and self._discover is not None:
            self._discovered = True
            self._discover()

    def load_plugins(self) -> None:
        """Import every entry point of the group; a broken plugin is an error naming its package."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.group):
            dist = ep.dist.name if ep.dist is not None else "?"
            origin = f"package {dist}, entry point {ep.name} = {ep.value} in group {self.group}"
            try:
                obj = ep.load()
            except Exception as e:  # any import failure of third-party code: say whose it is
                raise HpcbenchError(f"{origin}: cannot load it ({type(e).__name__}: {e})") from None
            self.add(ep.name, obj, origin)


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
