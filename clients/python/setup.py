"""The wheel and the sdist of governor-client.

Version: the VERSION file (beside this file in a staged tree or an sdist,
else at the repository's root), written into governor/_version.py of the
build.

The binary, governor/_bin/governor, comes from the first of:
  - governor/_bin/governor already there (build-wheels.sh puts the static
    binary of each OS/arch there; GOVERNOR_WHEEL_PLAT names the platform tag);
  - GOVERNOR_BIN: a governor binary to copy in;
  - the module's Go source (go-src/ in the sdist, the repository in a
    checkout) built with `go` when Go is on PATH, as the release builds the
    wheels' binary: static, without serve (-tags governor_noserve; the
    client runs it only as `governor bridge`);
and with none of them the wheel is pure and finds the binary at run time by
GOVERNOR_BIN or PATH."""

import os
import shutil
import stat
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # newer setuptools carry it themselves
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


def read_version() -> str:
    for path in (os.path.join(HERE, "VERSION"), os.path.join(HERE, "..", "..", "VERSION")):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
    raise SystemExit("setup.py: no VERSION file beside setup.py or at the repository's root")


VERSION = read_version()
STAGED = os.path.join(HERE, "governor", "_bin", "governor")
# The module's Go source: go-src/ in an sdist, the repository in a checkout.
GO_SRC = next((d for d in (os.path.join(HERE, "go-src"), os.path.join(HERE, "..", ".."))
               if os.path.isfile(os.path.join(d, "go.mod"))), "")


def binary_source() -> str:
    """Where the wheel's binary comes from: "staged", "env", "go" or ""."""
    if os.path.isfile(STAGED):
        return "staged"
    if os.environ.get("GOVERNOR_BIN"):
        return "env"
    if GO_SRC and shutil.which("go"):
        return "go"
    return ""


SOURCE = binary_source()
PLAT = os.environ.get("GOVERNOR_WHEEL_PLAT", "") or (
    sysconfig.get_platform().replace("-", "_").replace(".", "_") if SOURCE else "")


def go_build(out: str) -> None:
    commit = ""  # the sdist's COMMIT; in a checkout, git's
    if os.path.exists(os.path.join(HERE, "COMMIT")):
        with open(os.path.join(HERE, "COMMIT"), encoding="utf-8") as f:
            commit = f.read().strip()
    elif os.path.exists(os.path.join(GO_SRC, "release", "commit.sh")):
        commit = subprocess.run([os.path.join(GO_SRC, "release", "commit.sh")], stdout=subprocess.PIPE,
                                text=True, check=True).stdout.strip()
    ldflags = "-s -w -X github.com/governor-dev/governor/internal/buildinfo.commit=" + commit
    env = dict(os.environ, CGO_ENABLED="0")
    print("building the governor binary from %s with %s" % (GO_SRC, shutil.which("go")))
    subprocess.run(["go", "build", "-buildvcs=false", "-tags", "governor_noserve", "-ldflags", ldflags,
                    "-o", os.path.abspath(out), "./cmd/governor"],
                   cwd=GO_SRC, env=env, check=True)


class build_py(_build_py):
    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "governor")
        with open(os.path.join(pkg, "_version.py"), "w", encoding="utf-8") as f:
            f.write('"""The version this wheel was built at (VERSION)."""\n\n__version__ = %r\n' % VERSION)
        binary = os.path.join(pkg, "_bin", "governor")
        if SOURCE in ("env", "go"):
            os.makedirs(os.path.dirname(binary), exist_ok=True)
            if SOURCE == "env":
                shutil.copyfile(os.environ["GOVERNOR_BIN"], binary)
            else:
                go_build(binary)
        if os.path.exists(binary):
            os.chmod(binary, os.stat(binary).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


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
if SOURCE == "staged":
    packages.append("governor._bin")
    package_data["governor._bin"] = ["governor"]

setup(version=VERSION, cmdclass={"bdist_wheel": bdist_wheel, "build_py": build_py},
      packages=packages, package_data=package_data)
