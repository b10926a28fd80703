"""Builds the wheel of one of the test agents here, with nothing but the standard library,
so tests can run it through `uvx --offline` with no build backend fetched:

    python3 make_wheel.py PACKAGE_DIR OUT_DIR

PACKAGE_DIR is a folder holding one Python package (`lingering-py` holds
`lingering_agent/`); the distribution and its console script are the package's name with
dashes (`lingering-agent`), running its `main`. Prints the wheel's path."""
import base64
import hashlib
import pathlib
import sys

import zipfile

VERSION = "1.0.0"
root = pathlib.Path(sys.argv[1]).resolve()
(package,) = [p for p in root.iterdir() if (p / "__init__.py").is_file()]
module = package.name
dist = module.replace("_", "-")
info = f"{module}-{VERSION}.dist-info"
files = {f"{module}/{p.name}": p.read_bytes() for p in sorted(package.glob("*.py"))}
files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {VERSION}\n".encode()
files[f"{info}/WHEEL"] = (
    b"Wheel-Version: 1.0\nGenerator: make_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)
files[f"{info}/entry_points.txt"] = f"[console_scripts]\n{dist} = {module}:main\n".encode()
out = pathlib.Path(sys.argv[2]) / f"{module}-{VERSION}-py3-none-any.whl"
record = []
with zipfile.ZipFile(out, "w") as whl:
    for path, data in files.items():
        whl.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
print(out)
