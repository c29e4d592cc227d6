"""A minimal PEP 517 backend for a pure-Python package: it zips fgemma/ into a wheel (and the
tree into an sdist). In-tree so that installing needs nothing from the network."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version():
    """The version is written once, in CMake's project(fgemma VERSION x.y.z) of the repository's
    CMakeLists.txt; an sdist carries it in its PKG-INFO."""
    cmake = os.path.join(ROOT, "..", "..", "CMakeLists.txt")
    if os.path.exists(cmake):
        with open(cmake, encoding="utf-8") as f:
            found = re.search(r"project\(fgemma\s+VERSION\s+([0-9.]+)", f.read())
        if found:
            return found.group(1)
    pkg_info = os.path.join(ROOT, "PKG-INFO")
    if os.path.exists(pkg_info):
        with open(pkg_info, encoding="utf-8") as f:
            found = re.search(r"^Version: (\S+)$", f.read(), re.M)
        if found:
            return found.group(1)
    raise RuntimeError(f"fgemma's version: neither {cmake} (project(fgemma VERSION ...)) nor {pkg_info} found")


NAME, VERSION = "fgemma", _version()
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n" \
           "Summary: FunctionGemma on device: Python bindings over libfgemma's C API\n"
WHEEL = "Wheel-Version: 1.0\nGenerator: fgemma-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, NAME)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in sorted(filenames):
            if f.endswith((".py", ".so", ".so.1")):
                full = os.path.join(dirpath, f)
                yield full, os.path.relpath(full, ROOT)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    target = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(target, "WHEEL"), "w") as f:
        f.write(WHEEL)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        entries = [(arc, open(full, "rb").read()) for full, arc in _package_files()]
        entries += [(f"{DIST_INFO}/METADATA", METADATA.encode()), (f"{DIST_INFO}/WHEEL", WHEEL.encode())]
        for arc, data in entries:
            whl.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(f"{DIST_INFO}/RECORD,,")
        whl.writestr(f"{DIST_INFO}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "_build/backend.py"] + [arc for _, arc in _package_files()]:
            tar.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name
