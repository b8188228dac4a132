"""training/ is a package of recipes and data generators: every module imports, no two of them import each other
(even through a deferred import inside a function), each runnable one has a `main()`, and scripts/ keeps only the
shell scripts (no Python left behind)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "training"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(tree: ast.AST) -> set[str]:
    """The training modules a module imports anywhere in its body (functions included)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name in MODULES}


def import_graph() -> dict[str, set[str]]:
    return {name: imported(ast.parse(path.read_text(encoding="utf-8"))) - {name} for name, path in MODULES.items()}


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as the modules along it, or [] when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_package_holds_the_recipes_and_the_data_generators() -> None:
    assert {"training.train_pair_model", "training.export_pair_model", "training.pair_calibration",
            "training.data", "training.data.build_datasets", "training.data.intent_trace"} <= set(MODULES)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name: str) -> None:
    assert importlib.import_module(name).__name__ == name


def test_no_module_of_training_imports_one_that_imports_it_back() -> None:
    assert cycle(import_graph()) == []


def test_the_cycle_check_sees_a_deferred_import() -> None:
    tree = ast.parse("def main():\n    from training import export_pair_model\n")
    graph = {"training.export_pair_model": {"training.train_pair_model"},
             "training.train_pair_model": imported(tree)}
    assert cycle(graph) == ["training.export_pair_model", "training.train_pair_model", "training.export_pair_model"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_runnable_module_has_a_main(name: str) -> None:
    source = MODULES[name].read_text(encoding="utf-8")
    if 'if __name__ == "__main__":' in source:
        assert any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in ast.parse(source).body)


def test_scripts_holds_only_the_shell_scripts() -> None:
    assert not list((ROOT / "scripts").rglob("*.py"))
    assert (ROOT / "scripts" / "install.sh").is_file() and (ROOT / "scripts" / "test.sh").is_file()
