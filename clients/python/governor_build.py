"""The build backend of governor-client (PEP 517), in the standard library
alone: pip builds the wheel from the sdist with no build requirement to
fetch, so `pip install --no-index governor-client-X.Y.Z.tar.gz` works in a
fresh venv with no package index (pyproject.toml: requires = []).

The package's metadata is here (METADATA below), its version the VERSION
file (beside this file in a staged tree or an sdist, else at the repository's
root), written into governor/_version.py of the wheel.

The wheel's binary, governor/_bin/governor, comes from the first of:
  - governor/_bin/governor already there (build-wheels.sh puts the static
    binary of each OS/arch there; GOVERNOR_WHEEL_PLAT names the platform tag);
  - GOVERNOR_BIN: a governor binary to copy in;
  - the module's Go source (go-src/ in the sdist, the repository in a
    checkout) built with `go` when Go is on PATH, as the release builds the
    wheels' binary (release/build-binary.sh --without-serve: static, -trimpath,
    without serve: the client runs it only as `governor bridge`);
and with none of them the wheel is pure and finds the binary at run time by
GOVERNOR_BIN or PATH. LICENSE and, when there, THIRD_PARTY_NOTICES (the
licences of the Go modules in the binary) go into the .dist-info.

Archives are reproducible: entries sorted, fixed modes and owners, every
time SOURCE_DATE_EPOCH (1980-01-01 when unset), gzip without a name or time."""

import base64
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sysconfig
import tarfile
import tempfile
import time
import zipfile

NAME = "governor-client"  # the sdist and the wheel are named by DIST (PEP 625, PEP 427)
DIST = "governor_client"
SPDX = "Apache-2.0"
METADATA = """Metadata-Version: 2.1
Name: {name}
Version: {version}
Summary: governor from Python: cross-process slots, leases and rate limits through the governor bridge
License: {spdx}
Classifier: License :: OSI Approved :: Apache Software License
Requires-Python: >=3.9
Project-URL: Homepage, https://github.com/governor-dev/governor
Project-URL: Documentation, https://github.com/governor-dev/governor/blob/main/docs/python.md
"""
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")  # the repository, in a checkout
PKG = os.path.join(HERE, "governor")
STAGED = os.path.join(PKG, "_bin", "governor")
# The sdist's files beside the package, each with where it is in a checkout.
TOP = ("pyproject.toml", "governor_build.py", "LICENSE", "VERSION", "COMMIT", "THIRD_PARTY_NOTICES")


def _find(name):
    """name beside this file, else at the repository's root; "" when neither."""
    for d in (HERE, ROOT):
        if os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    return ""


def _read(name):
    path = _find(name)
    if not path:
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def _version():
    v = _read("VERSION")
    if not v:
        raise SystemExit("governor_build: no VERSION file beside governor_build.py or at the repository's root")
    return v


def _go_src():
    """The module's Go source: go-src/ in an sdist, the repository in a checkout."""
    for d in (os.path.join(HERE, "go-src"), ROOT):
        if os.path.isfile(os.path.join(d, "go.mod")):
            return d
    return ""


def _epoch():
    return max(int(os.environ.get("SOURCE_DATE_EPOCH") or 315532800), 315532800)


def _metadata():
    return METADATA.format(name=NAME, version=_version(), spdx=SPDX)


def _package_files():
    """(path in the wheel, path here) of the package's sources, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(PKG):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "_bin")]
        for f in filenames:
            if f.endswith(".py") or f == "py.typed":
                full = os.path.join(dirpath, f)
                out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return sorted(out)


def _binary(tmp):
    """The binary for the wheel (a path, "" for none) and its platform tag."""
    plat = os.environ.get("GOVERNOR_WHEEL_PLAT", "")
    host = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if os.path.isfile(STAGED):
        return STAGED, plat or host
    if os.environ.get("GOVERNOR_BIN"):
        return os.environ["GOVERNOR_BIN"], plat or host
    src = _go_src()
    if not src or not shutil.which("go"):
        return "", ""
    commit = _read("COMMIT")  # the sdist's; in a checkout, git's
    if not commit and os.path.isfile(os.path.join(src, "release", "commit.sh")):
        commit = subprocess.run([os.path.join(src, "release", "commit.sh")], stdout=subprocess.PIPE,
                                universal_newlines=True, check=True).stdout.strip()
    out = os.path.join(tmp, "governor")
    print("building the governor binary from %s with %s" % (src, shutil.which("go")), flush=True)
    subprocess.run(["go", "build", "-trimpath", "-buildvcs=false", "-tags", "governor_noserve", "-ldflags",
                    "-s -w -X github.com/governor-dev/governor/internal/buildinfo.commit=" + commit,
                    "-o", out, "./cmd/governor"], cwd=src, env=dict(os.environ, CGO_ENABLED="0"), check=True)
    return out, plat or host


def _zipinfo(name, mode):
    zi = zipfile.ZipInfo(name, date_time=time.gmtime(_epoch())[:6])
    zi.external_attr = (0o100000 | mode) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    return zi


def _dist_info(version, plat, files):
    """The .dist-info's files (name, bytes) for a wheel of files."""
    di = "%s-%s.dist-info/" % (DIST, version)
    wheel = "Wheel-Version: 1.0\nGenerator: governor_build\nRoot-Is-Purelib: %s\nTag: py3-none-%s\n" % (
        "false" if plat else "true", plat or "any")
    out = [(di + "METADATA", _metadata().encode()), (di + "WHEEL", wheel.encode())]
    for name in ("LICENSE", "THIRD_PARTY_NOTICES"):
        if _find(name):
            with open(_find(name), "rb") as f:
                out.append((di + name, f.read()))
    record = []
    for name, data in files + out:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(di + "RECORD,,")
    return out + [(di + "RECORD", ("\n".join(record) + "\n").encode())]


def _write_wheel(directory, plat, files):
    version = _version()
    name = "%s-%s-py3-none-%s.whl" % (DIST, version, plat or "any")
    meta = _dist_info(version, plat, files)
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for arc, data in sorted(files) + meta:  # the .dist-info last, RECORD at the end
            z.writestr(_zipinfo(arc, 0o755 if arc == "governor/_bin/governor" else 0o644), data)
    return name


def _version_py(version):
    return ('"""The version this wheel was built at (VERSION)."""\n\n__version__ = %r\n' % version).encode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    files = []
    for arc, full in _package_files():
        with open(full, "rb") as f:
            files.append((arc, _version_py(version) if arc == "governor/_version.py" else f.read()))
    with tempfile.TemporaryDirectory() as tmp:
        binary, plat = _binary(tmp)
        if binary:
            with open(binary, "rb") as f:
                files.append(("governor/_bin/governor", f.read()))
    return _write_wheel(wheel_directory, plat, files)


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    top = "%s-%s" % (DIST, version)
    entries = [("PKG-INFO", _metadata().encode(), 0o644)]
    for name in TOP:
        path = _find(name)
        if path:
            with open(path, "rb") as f:
                entries.append((name, f.read(), 0o644))
    for arc, full in _package_files():
        with open(full, "rb") as f:
            entries.append((arc, f.read(), 0o644))
    go_src = os.path.join(HERE, "go-src")  # a staged tree's (build-wheels.sh); none from a checkout
    for dirpath, dirnames, filenames in os.walk(go_src):
        for f in filenames:
            full = os.path.join(dirpath, f)
            with open(full, "rb") as fh:
                entries.append((os.path.relpath(full, HERE).replace(os.sep, "/"), fh.read(),
                                0o755 if os.access(full, os.X_OK) else 0o644))
    name = top + ".tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arc, data, mode in sorted(entries):
            ti = tarfile.TarInfo(top + "/" + arc)
            ti.size, ti.mode, ti.mtime = len(data), mode, _epoch()
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            tar.addfile(ti, io.BytesIO(data))
    with open(os.path.join(sdist_directory, name), "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(buf.getvalue())
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    di = "%s-%s.dist-info" % (DIST, _version())
    os.makedirs(os.path.join(metadata_directory, di), exist_ok=True)
    with open(os.path.join(metadata_directory, di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return di
