"""The architecture, checked from the modules' own import statements (every one: top level, inside functions,
under `TYPE_CHECKING`): no import cycle among the modules of `index/`, `service/` and `eval/`, `index/`'s
sub-packages import only the layers below them, in the order a request walks the pipeline, and no product module
imports the learned veto (the judge, the pair model, exploration), which lives in `training/` only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("index", "service", "eval")
# Lowest first: a module may import its own layer's modules and any layer before it, never one after it.
INDEX_LAYERS = (
    ("index.errors", "index.jsonio"),
    ("index.embedding",),
    ("index.pricing",),
    ("index.records",),
    ("index.request",),
    ("index.reuse",),
    ("index.guards",),
    ("index.match",),
    ("index.search",),
    ("index.storage",),
    ("index.cache",),
    ("index.maintenance", "index.forgetting"),
    ("index.settings",),
)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _imported(node: ast.AST, module: str, path: Path) -> Iterator[str]:
    """The project modules one import statement names (`from a import b` names a.b when b is a module)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _imported(node, name, path):
                if target in MODULES and target != name:
                    graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, or None (iterative DFS with colours)."""
    colour: dict[str, int] = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if colour[start]:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[child] == 1:
                return [*path[path.index(child):], child]
            elif colour[child] == 0:
                colour[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def _layer(module: str) -> int:
    for rank, prefixes in enumerate(INDEX_LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer of index/: add it to INDEX_LAYERS")


def test_no_import_cycle_among_the_packages() -> None:
    assert _cycle(_edges()) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("index.") and "migrations" not in m))
def test_index_imports_flow_down_the_pipeline(module: str) -> None:
    upward = [t for t in _edges_of(module) if t.startswith("index.") and _layer(t) > _layer(module)]
    assert upward == [], f"{module} imports a later layer"


# The `deja` command line is the one composition root: `deja eval ...` mounts eval's typer app.
COMPOSITION_ROOT = "service.cli"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != COMPOSITION_ROOT))
def test_index_never_imports_service_or_eval_and_they_never_import_each_other(module: str) -> None:
    top = module.split(".")[0]
    forbidden = {"index": ("service", "eval"), "service": ("eval",), "eval": ("service",)}[top]
    assert [t for t in _edges_of(module) if t.split(".")[0] in forbidden] == []


def test_index_shows_the_pipeline_as_sub_packages() -> None:
    packages = {p.parent.name for p in (ROOT / "index").glob("*/__init__.py")}
    assert {"request", "embedding", "search", "storage", "guards", "match"} <= packages


# The product: what ships and what its tests and benchmarks run on. `training/` may import it, never the reverse.
PRODUCT = ("index", "service", "eval", "bench", "support")
# Names of the learned veto (removed from the product, docs/learned-veto.md): its judge, its pair model and their
# calibration, the decision step and the exploration that read it. A product import naming one brings it back.
LEARNED_VETO = ("judge", "pair_model", "pair_calibration", "learned", "explore", "training")


def _product_imports() -> Iterator[tuple[str, str]]:
    """(file, imported name) for every absolute import in the product's modules, the imported names included."""
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
                else:
                    continue
                yield from ((str(path.relative_to(ROOT)), name) for name in names)


def _names_the_learned_veto(name: str) -> bool:
    return any(part in LEARNED_VETO for part in name.split("."))


def test_no_product_module_imports_the_learned_veto() -> None:
    found = [f"{path}: {name}" for path, name in _product_imports() if _names_the_learned_veto(name)]
    assert found == []


def test_the_check_would_catch_the_learned_veto_coming_back() -> None:
    assert _names_the_learned_veto("index.judge.model") and _names_the_learned_veto("index.match.learned")
    assert _names_the_learned_veto("index.match.explore.Exploration")
    assert _names_the_learned_veto("training.judge.pair_model.PairStage")
    assert not _names_the_learned_veto("index.match.live_threshold")
    assert not _names_the_learned_veto("service.label_model")


@pytest.mark.parametrize("path", ["index/judge", "index/match/learned.py", "index/match/explore.py", "index/data",
                                  "index/storage/judge_models.py", "eval/fit.py", "support/judges.py"])
def test_the_learned_veto_left_the_product_package(path: str) -> None:
    assert not (ROOT / path).exists()


def _edges_of(module: str) -> set[str]:
    return _GRAPH[module]


_GRAPH = _edges()
