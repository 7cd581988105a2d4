"""Docstrings and code shape of benchctl/estimators (style.md items 1, 2, 5, 6, 10, 18)."""

import ast
import dataclasses
import inspect
import re
import sys
from pathlib import Path

import pytest

import benchctl.estimators
from benchctl.estimators import estimator_info, registered_names
from benchctl.estimators.registry import get_spec

PACKAGE = Path(benchctl.estimators.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


@pytest.mark.parametrize("name", registered_names())
def test_docstring_cites_arxiv_and_an_equation_or_section_with_formula_and_shapes(name):
    doc = inspect.getdoc(get_spec(name).fn) or ""
    assert re.search(r"arXiv:\d{4}\.\d{4,5}", doc), f"{name}: no arXiv id"
    assert re.search(r"Eq\.|§", doc), f"{name}: no equation or section"
    info = estimator_info(name)
    assert info.formula and "Shapes:" in doc and "Deviations:" in doc and info.description


@pytest.mark.parametrize("name", registered_names())
def test_every_hyperparameter_field_has_help_and_the_dataclass_is_frozen(name):
    params = get_spec(name).params
    assert params.__dataclass_params__.frozen
    for field in dataclasses.fields(params):
        assert field.metadata.get("help"), f"{name}.{field.name} has no help string"


@pytest.mark.parametrize("name", registered_names())
def test_defaults_quoted_in_docstrings_equal_the_real_defaults(name):
    spec = get_spec(name)
    defaults = {f.name: f.default for f in dataclasses.fields(spec.params)}
    text = (inspect.getdoc(spec.fn) or "") + (sys.modules[spec.fn.__module__].__doc__ or "")
    quoted = re.findall(r"\b(\w+)=([-+\w.]+)", text)
    for key, value in quoted:
        if key in defaults:
            assert str(defaults[key]) == value or float(value) == defaults[key], f"{name}: {key}={value}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_modules_are_small(path):
    limit = 80 if path.name == "registry.py" else 200
    assert len(path.read_text().splitlines()) <= limit


@pytest.mark.parametrize("path", MODULES + [PACKAGE.parent / "cli" / "estimators.py"], ids=lambda p: p.name)
def test_no_function_longer_than_60_lines(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno + 1 <= 60, f"{path.name}:{node.name}"


def test_no_item_calls_or_prints_in_the_estimators():
    for path in MODULES:
        text = path.read_text()
        assert ".item()" not in text and "print(" not in text, path.name


def test_no_module_imports_torch_at_top_level():
    for path in MODULES + [PACKAGE.parent / "cli" / "estimators.py"]:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.split(".")[0] == "torch" for n in names), path.name


def test_every_family_module_states_its_deviations():
    families = {get_spec(name).fn.__module__ for name in registered_names()}
    for module in families:
        assert "Deviation" in (sys.modules[module].__doc__ or ""), module


def test_docstring_default_check_sees_the_quoted_defaults():
    spec = get_spec("ha_dw")
    quoted = dict(re.findall(r"\b(\w+)=([-+\w.]+)", inspect.getdoc(spec.fn)))
    assert {"eta", "m", "h"} <= set(quoted)
