"""The client's version: the VERSION file at the repository's root, the one
source of the version of the binary, the wheels and the npm packages. A
built wheel carries this file rewritten as ``__version__ = "X.Y.Z"`` (governor_build.py)."""

import os


def _from_repository() -> str:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "VERSION")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


__version__ = _from_repository()
