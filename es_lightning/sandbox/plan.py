"""Which probes a sandboxed child evaluates for a list of test statements, and each test's verdict.

``assert <expr> == <literal>``: the probe is ``<expr>``, compared here with the literal no child
sees. Other statements take two phases: probes rooted at names the model's code binds, then a
child with **no model code** running the test with each probe replaced by its value's literal.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Any

from es_lightning.sandbox.protocol import Failure, value_source

_BUILTIN_NAMES = frozenset(dir(builtins))


def module_bindings(tree: ast.Module) -> tuple[set[str], set[str], list[ast.stmt]]:
    """Names a module binds at module level: ``(defined, imported, import statements)``."""
    defined = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
    imported: set[str] = set()
    imports: list[ast.stmt] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
            body = {id(s) for s in node.body}
            stack += [c for c in ast.iter_child_nodes(node) if id(c) not in body]
            continue
        if isinstance(node, ast.Lambda):
            stack.append(node.args)
            continue
        if isinstance(node, ast.comprehension):
            stack += [node.iter, *node.ifs]  # its target is local to the comprehension
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            defined.add(node.id)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            defined.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            defined.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    imports.sort(key=lambda s: (s.lineno, s.col_offset))
    return defined, imported, imports


def replayable_import(statement: ast.stmt) -> str | None:
    """The source of a model import statement that phase 2 may run, or ``None``."""
    if isinstance(statement, ast.ImportFrom):
        if statement.level or statement.module == "__future__":
            return None
        names = [a for a in statement.names if a.asname in (None, a.name)]
        node: ast.stmt = ast.ImportFrom(module=statement.module, names=names, level=0)
    else:
        names = list(statement.names)  # type: ignore[attr-defined]
        node = ast.Import(names=names)
    return ast.unparse(node) if names else None


def _chain_root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def find_probes(tree: ast.AST, roots: set[str]) -> list[ast.expr]:
    """The outermost expressions in ``tree`` rooted at a name in ``roots``, in source order."""
    found: list[ast.expr] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        loads = not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))
        if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)) and loads:
            if _chain_root(node) in roots:
                found.append(node)
                continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


@dataclass
class Plan:
    """How to verify ``tests``: the probes phase 1 evaluates and what each test needs from them."""

    probes: list[str] = field(default_factory=list)
    expected: dict[int, tuple[int, Any]] = field(default_factory=dict)
    """Fast tests: test index -> (probe index, expected value)."""
    two_phase: dict[int, tuple[ast.Module, list[tuple[ast.expr, int]]]] = field(default_factory=dict)
    """Two-phase tests: test index -> (its tree, [(probe node, probe index)])."""
    imports: list[str] = field(default_factory=list)

    def verdicts(self, n_tests: int, values: list[Any] | None) -> tuple[list[bool], dict[int, str]]:
        """Fast verdicts and the rewritten source of each test phase 2 must run."""
        passed = [False] * n_tests
        rewritten: dict[int, str] = {}
        if values is None:
            return passed, rewritten
        for i, (probe, expected) in self.expected.items():
            value = values[probe]
            passed[i] = not isinstance(value, Failure) and _equal(value, expected)
        for i, (tree, probes) in self.two_phase.items():
            if any(isinstance(values[p], Failure) for _, p in probes):
                continue
            try:
                swap = {id(node): ast.parse(value_source(values[p]), mode="eval").body for node, p in probes}
                rewritten[i] = ast.unparse(_Swap(swap).visit(tree))
            except (ValueError, TypeError, RecursionError, SyntaxError, MemoryError):
                continue
        return passed, rewritten


class _Swap(ast.NodeTransformer):
    def __init__(self, swap: dict[int, ast.expr]) -> None:
        self.swap = swap

    def visit(self, node: ast.AST) -> ast.AST:
        return self.swap.get(id(node)) or self.generic_visit(node)  # type: ignore[return-value]


def _equal(value: Any, expected: Any) -> bool:
    try:
        return bool(value == expected)
    except Exception:  # noqa: BLE001 - builtins only, but a deep value may hit the recursion limit
        return False


def _fast_form(tree: ast.Module) -> tuple[ast.expr, Any] | None:
    """``(<expr>, expected)`` when ``tree`` is exactly ``assert <expr> == <literal>``."""
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    test = tree.body[0].test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return None
    try:
        return test.left, ast.literal_eval(test.comparators[0])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def plan(code_tree: ast.Module, tests: list[str], setup: str) -> Plan:
    """The :class:`Plan` for ``tests`` against the model's parsed code (rules of the module docstring)."""
    defined, imported, imports = module_bindings(code_tree)
    try:
        setup_defined, setup_imported, _ = module_bindings(ast.parse(setup))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        setup_defined = setup_imported = set()
    result = Plan()
    test_bound: set[str] = set()
    for i, test in enumerate(tests):
        try:
            tree = ast.parse(test)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue  # fails, as it would fail to compile
        fast = _fast_form(tree)
        if fast and not any(isinstance(n, ast.Name) and n.id in test_bound for n in ast.walk(fast[0])):
            result.expected[i] = (len(result.probes), fast[1])
            result.probes.append(ast.unparse(fast[0]))
            continue
        roots = defined - imported - setup_defined - setup_imported - test_bound - _BUILTIN_NAMES
        probes = find_probes(tree, roots)
        result.two_phase[i] = (tree, [(node, len(result.probes) + k) for k, node in enumerate(probes)])
        result.probes += [ast.unparse(node) for node in probes]
        bound, bound_imports, _ = module_bindings(tree)
        test_bound |= bound | bound_imports
    if result.two_phase:
        result.imports = [s for s in map(replayable_import, imports) if s]
    return result
