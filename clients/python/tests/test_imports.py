"""The package's import graph: no module imports one that imports it back
(read from the sources with ast, every import statement, also inside
functions; imports under ``if TYPE_CHECKING:`` only serve the type checker
and are left out), and a sync slot imports none of the heavy modules."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import unittest
from typing import Dict, List, Set

from tests import support

import governor

PKG = os.path.dirname(os.path.abspath(governor.__file__))  # the sources, or the installed wheel


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" or \
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"


def _imports(tree: ast.AST, module: str, modules: Set[str]) -> Set[str]:
    """The package modules that module's statements import."""
    out: Set[str] = set()
    package = module if module == "governor" else module.rsplit(".", 1)[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "governor" or a.name.startswith("governor."):
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                base = base + ("." + node.module if node.module else "")
            else:
                base = node.module or ""
            if base == "governor" or base.startswith("governor."):
                for a in node.names:
                    sub = base + "." + a.name
                    out.add(sub if sub in modules else base)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            out.add("governor")  # a dynamic import: counted as one of the package (its lazy names)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    out.discard(module)
    return out


def graph() -> Dict[str, Set[str]]:
    files = {("governor" if f == "__init__.py" else "governor." + f[:-3]): os.path.join(PKG, f)
             for f in os.listdir(PKG) if f.endswith(".py")}
    g = {}
    for mod, path in files.items():
        with open(path) as f:
            g[mod] = _imports(ast.parse(f.read(), path), mod, set(files))
    return g


def cycles(g: Dict[str, Set[str]]) -> List[List[str]]:
    """Every import circle among the package's own modules (through
    the package's __init__ only as its own edges: a submodule's
    ``from . import x`` names x, not the package)."""
    found: List[List[str]] = []
    state: Dict[str, int] = {}
    stack: List[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g.get(m, ())):
            if state.get(n) == 1:
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                dfs(n)
        stack.pop()
        state[m] = 2
    for m in sorted(g):
        if m not in state:
            dfs(m)
    return found


class ImportGraphTests(unittest.TestCase):

    def test_no_import_circle(self) -> None:
        g = graph()
        self.assertIn("governor._bridge", g["governor._api"], "the graph reader lost _api's import of _bridge")
        self.assertEqual(cycles(g), [], "import circles in the governor package")

    def test_the_reader_finds_a_circle(self) -> None:
        tree = ast.parse("from . import _api\n\ndef f():\n    from ._bridge import x\n")
        mods = {"governor._api", "governor._bridge"}
        g = {"governor._bridge": _imports(tree, "governor._bridge", mods),
             "governor._api": {"governor._bridge"}}
        self.assertEqual(cycles(g), [["governor._api", "governor._bridge", "governor._api"]])
        typed = ast.parse("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from ._api import Lease\n")
        self.assertEqual(_imports(typed, "governor._bridge", mods), set())


# What a cold script pays for is what it imports: a sync slot needs none of these.
HEAVY = ["asyncio", "json", "subprocess", "threading", "typing", "dataclasses", "inspect", "uuid", "socket",
         "datetime", "shutil", "re", "weakref", "concurrent"]


class ColdImportTests(support.FileCase):

    def modules(self, code: str) -> Set[str]:
        return set(subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                                  env=self.backend.env(), stdout=subprocess.PIPE, text=True, check=True,
                                  timeout=support.DEADLINE).stdout.split())

    def imported(self, code: str) -> List[str]:
        """The heavy modules code imports that the interpreter's start
        (site, .pth files) did not."""
        out = self.modules(code) - self.modules("pass")
        return [m for m in HEAVY if m in out]

    def test_import_governor_is_light(self) -> None:
        self.assertEqual(self.imported("import governor"), [])
        out = subprocess.run([sys.executable, "-c", "import governor, sys\n"
                              "print(' '.join(sorted(m for m in sys.modules if m.startswith('governor'))))"],
                             env=self.backend.env(), stdout=subprocess.PIPE, text=True, check=True,
                             timeout=support.DEADLINE).stdout.split()
        self.assertEqual(out, ["governor", "governor.errors"], "the client is loaded by the first slot, not the import")

    def test_a_sync_slot_is_light(self) -> None:
        self.assertEqual(self.imported("import governor\nwith governor.slot('cold', limit=1): pass"), [])

    def test_lazy_names_resolve(self) -> None:
        import governor
        for name in ("Governor", "Lease", "default", "PROTOCOL", "find_binary", "Provider", "RateLimited", "Holder",
                     "Waiter", "Resource"):
            self.assertTrue(hasattr(governor, name), name)
            self.assertIn(name, dir(governor))
        with self.assertRaises(AttributeError):
            governor.NoSuchName  # noqa: B018


if __name__ == "__main__":
    unittest.main()
