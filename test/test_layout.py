"""The package's layers (docs/architecture.md): every import goes downward, no module imports a CLI, no
import cycle, and nothing outside the ROS drivers imports rclpy."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "safety_monitor"
# lowest first; a module may import its own layer and those below it
LAYERS = (
    {"", "errors", "enums", "records", "files", "arguments", "installation", "executors", "mujoco_gl", "names"},
    {"frames"},
    {"settings"},
    {"specs"},
    {"monitor"},
    {"grounding"},
    {"io"},
    {"pipeline"},
    {"sim"},
    {"replay", "verify"},
    {"nodes"},
    {"cli"},
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
ROS_DRIVERS = {"nodes"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path, module_level_only: bool = False) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if module_level_only else ast.walk(tree)
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.module, node.lineno)]
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_downward_only(module):
    here = _layer(module)
    assert here in RANK, f"{module}: the layer {here!r} is not in LAYERS (add it where it belongs)"
    upward = [
        f"line {line}: {name}"
        for name, line in _imports(MODULES[module])
        if name.startswith("safety_monitor.") and name in MODULES and RANK[_layer(name)] > RANK[here]
    ]
    assert not upward, f"{module} imports a higher layer: {upward}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) not in ROS_DRIVERS))
def test_only_the_ros_drivers_import_rclpy(module):
    ros = [f"line {line}: {name}" for name, line in _imports(MODULES[module]) if name.split(".")[0] == "rclpy"]
    assert not ros, f"{module} imports rclpy outside nodes/: {ros}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "safety_monitor.mujoco_gl"))
def test_mujoco_is_imported_through_mujoco_gl(module):
    """A bad MUJOCO_GL fails `import mujoco`; only safety_monitor.mujoco_gl turns that into a line naming it."""
    direct = [f"line {line}: {name}" for name, line in _imports(MODULES[module]) if name.split(".")[0] == "mujoco"]
    assert not direct, f"{module} imports mujoco itself, not from safety_monitor.mujoco_gl: {direct}"


def test_there_is_no_import_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        graph[module] = {
            name for name, _ in _imports(path, module_level_only=True) if name in MODULES and name != module
        }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt) :] + [nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The checks above would pass vacuously if `_imports` found nothing: it must see both import forms."""
    probe = tmp_path / "probe.py"
    probe.write_text("import safety_monitor.cli\n\ndef f():\n    from safety_monitor.nodes import qos\n")
    names = {name for name, _ in _imports(probe)}
    assert {"safety_monitor.cli", "safety_monitor.nodes", "safety_monitor.nodes.qos"} <= names
    assert {name for name, _ in _imports(probe, module_level_only=True)} == {"safety_monitor.cli"}
