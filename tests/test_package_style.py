"""Package-wide habits from spec/style.md that a reader relies on: short functions, a thin CLI."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "benchctl"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item, True
    methods = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods:
            yield node, False


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_longer_than_60_lines_or_method_longer_than_80(path):
    tree = ast.parse(path.read_text())
    too_long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node, is_method in _functions(tree)
        if node.end_lineno - node.lineno + 1 > (80 if is_method else 60)
    ]
    assert not too_long, f"{path.name}: {too_long}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_cli_modules_import_no_heavy_backend_at_top(path):
    tree = ast.parse(path.read_text())
    heavy = {"torch", "vllm", "math_verify", "transformers", "sympy", "matplotlib"}
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in top if isinstance(n, ast.ImportFrom) and n.module}
    assert not names & heavy


# Imported only where their extra or venv is installed (pyproject's optional dependencies, the veRL venv); benchctl
# itself never needs them. `pytest` is imported by benchctl.models.testing, the fixture factories for tests.
OPTIONAL_IMPORTS = {"vllm", "ray", "trl", "verl", "tensorboard", "wandb", "trackio", "pytest"}


def test_every_package_the_code_imports_is_a_declared_dependency():
    import re
    import sys
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in project["dependencies"]}
    modules = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - OPTIONAL_IMPORTS - {"benchctl"}
    distributions = packages_distributions()
    undeclared = {
        module: distributions.get(module)
        for module in third_party
        if not {d.lower().replace("_", "-") for d in distributions.get(module, [module])} & declared
    }
    assert not undeclared, f"imported but not in pyproject.toml [project] dependencies: {undeclared}"
