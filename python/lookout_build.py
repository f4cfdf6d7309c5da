"""A PEP 517 build backend for the lookout package, standard library only.

pip builds a wheel of ./python in an isolated environment and installs the
backend's requirements there first; setuptools would have to be downloaded,
which fails offline. This backend needs nothing: it zips the lookout package
with the metadata the wheel format (PEP 427) asks for.
"""

import base64
import hashlib
import os
import re
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = "lookout"


def _project():
    """Name, version, summary and requires-python from pyproject.toml."""
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(key):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), project, re.M)
        return m.group(1) if m else ""

    return field("name"), field("version"), field("description"), field("requires-python")


def _dist_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata():
    name, version, summary, requires = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version,
             "Summary: " + summary, "License: Apache-2.0"]
    if requires:
        lines.append("Requires-Python: " + requires)
    return "\n".join(lines) + "\n"


def _wheel_name():
    name, version, _, _ = _project()
    return "%s-%s-py3-none-any.whl" % (_dist_name(name), version)


def _dist_info():
    name, version, _, _ = _project()
    return "%s-%s.dist-info" % (_dist_name(name), version)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    path = os.path.join(metadata_directory, _dist_info())
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    pkg = os.path.join(_HERE, _PACKAGE)
    for root, dirs, names in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":
                full = os.path.join(root, n)
                with open(full, "rb") as f:
                    files.append((os.path.relpath(full, _HERE).replace(os.sep, "/"), f.read()))
    info = _dist_info()
    files.append((info + "/METADATA", _metadata().encode()))
    files.append((info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: lookout_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = []
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = _wheel_name()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return name
