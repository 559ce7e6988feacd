"""Platform wheels: with GOVERNOR_WHEEL_PLAT set (build-wheels.sh sets it),
the wheel is tagged py3-none-PLAT and carries governor/_bin/governor; without
it, a pure wheel that finds the binary by GOVERNOR_BIN or PATH."""

import os

from setuptools import setup

try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # newer setuptools carry it themselves
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel

PLAT = os.environ.get("GOVERNOR_WHEEL_PLAT", "")


class bdist_wheel(_bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        if PLAT:
            self.root_is_pure = False

    def get_tag(self):
        if PLAT:
            return "py3", "none", PLAT
        return super().get_tag()


packages = ["governor"]
package_data = {"governor": ["py.typed"]}
if os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "governor", "_bin")):
    packages.append("governor._bin")
    package_data["governor._bin"] = ["governor"]

setup(cmdclass={"bdist_wheel": bdist_wheel}, packages=packages, package_data=package_data)
