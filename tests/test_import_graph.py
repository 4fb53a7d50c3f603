"""The layout rule: no import cycle among the modules of gateway/, workers/ and channel/.

grimp counts every import, those under ``if TYPE_CHECKING`` too: a type-only import is
still a design dependency, so it may not close a cycle either.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

import grimp

PACKAGES = ("gateway", "workers", "channel")

Graph = Mapping[str, Iterable[str]]


def import_graph() -> dict[str, set[str]]:
    """Each module of PACKAGES mapped to the modules of PACKAGES it imports directly."""
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    return {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def loop_through(graph: Graph, component: list[str], start: str) -> list[str]:
    """A shortest import chain from ``start`` back to itself inside the component."""
    members = set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for child in sorted(graph[module]):
            if child not in members:
                continue
            if child == start:
                chain = [module]
                while chain[-1] != start:
                    chain.append(came_from[chain[-1]])
                return [start, *reversed(chain[:-1]), start]
            if child not in came_from:
                came_from[child] = module
                queue.append(child)
    raise AssertionError(f"{start} is on no cycle of {component}")


def loops_of(graph: Graph, component: list[str]) -> list[str]:
    """The shortest loop through each module of the component, each loop spelled once."""
    spelled = set()
    for start in component:
        loop = loop_through(graph, component, start)[:-1]
        first = loop.index(min(loop))
        rotated = [*loop[first:], *loop[:first]]
        spelled.add(" -> ".join([*rotated, rotated[0]]))
    return sorted(spelled)


def test_the_checker_finds_a_cycle_and_spells_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert loop_through(graph, ["a", "b", "c"], "b") == ["b", "c", "a", "b"]
    assert loops_of({"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}, ["a", "b", "c"]) == [
        "a -> b -> a",
        "b -> c -> b",
    ]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 50
    loops = [loop for component in cycles(graph) for loop in loops_of(graph, component)]
    assert loops == [], "import cycles:\n" + "\n".join(loops)
