"""ament_python package: `colcon build` in a ROS 2 workspace, or `pip install .` on a plain machine."""

import importlib.util
from glob import glob
from pathlib import Path

import numpy
from setuptools import Extension, find_packages, setup

PACKAGE = "safety_monitor"


def mujoco_headers() -> list[str]:
    """The folder of the MuJoCo headers the mujoco wheel ships beside its bindings (found without importing them),
    or none: the kernels then call MuJoCo through the bindings only."""
    spec = importlib.util.find_spec("mujoco")
    origin = spec.origin if spec is not None else None
    folder = Path(origin).parent / "include" if origin else None
    return [str(folder)] if folder is not None and (folder / "mujoco" / "mujoco.h").is_file() else []


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    # the estimators' box and rotation kernels (C: numpy's per-call overhead is most of such small sums);
    # no multiply-add contraction, so results do not depend on the machine's FMA support
    ext_modules=[
        Extension(
            f"{PACKAGE}.grounding._geomath",
            [f"{PACKAGE}/grounding/_geomath.c"],
            # the kernels read arrays through numpy's C API, and MuJoCo's structs through its headers where found
            include_dirs=[numpy.get_include(), *mujoco_headers()],
            define_macros=[("SAFETY_MONITOR_MUJOCO", "1")] if mujoco_headers() else [],
            extra_compile_args=["-O2", "-ffp-contract=off", "-std=c99"],
        )
    ],
    package_data={PACKAGE: ["py.typed", "data/*", "sim/*.xml", "grounding/_geomath.pyi"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
    ],
    python_requires=">=3.10",
    install_requires=["setuptools", "numpy", "PyYAML", "ltlf2dfa>=2.0", "lark>=1.1.5"],
    zip_safe=False,
    maintainer="safety_monitor maintainers",
    maintainer_email="safety-monitor@example.org",
    description="Temporal-logic safety monitoring for ROS 2 manipulators.",
    license="Apache-2.0",
    # `colcon test` (ament_python) runs pytest on test/ when a "test" extra names pytest; tests_require
    # is gone from setuptools. package.xml's <test_depend> entries are the rosdep side of the same list.
    # "ray": `--ray` (replay, equiv --candidates, ctl) runs tasks on a Ray cluster; nothing else needs it
    extras_require={"test": ["pytest", "hypothesis"], "ray": ["ray"]},
    # the nodes enter through runtime.py, which takes SIGINT and SIGTERM before rclpy and MuJoCo load
    entry_points={
        "console_scripts": [
            "safety-monitor = safety_monitor.cli:main",
            "sim_node = safety_monitor.nodes.programs:sim_node",
            "estimator_node = safety_monitor.nodes.programs:estimator_node",
            "monitor_node = safety_monitor.nodes.programs:monitor_node",
            "monitor_stack = safety_monitor.nodes.programs:monitor_stack",
            "alerts = safety_monitor.nodes.alerts:main",
        ],
    },
)
