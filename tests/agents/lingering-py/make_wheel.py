"""Builds the wheel of the lingering test agent (a console script `lingering-agent`) into
the folder given as the only argument, with nothing but the standard library: the tests run
it through `uvx --offline`, so no build backend is fetched. Prints the wheel's path."""
import base64
import hashlib
import pathlib
import sys
import zipfile

NAME, VERSION = "lingering_agent", "1.0.0"
here = pathlib.Path(__file__).resolve().parent
info = f"{NAME}-{VERSION}.dist-info"
files = {
    f"{NAME}/__init__.py": (here / NAME / "__init__.py").read_bytes(),
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: lingering-agent\nVersion: {VERSION}\n".encode(),
    f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: make_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{info}/entry_points.txt": f"[console_scripts]\nlingering-agent = {NAME}:main\n".encode(),
}
out = pathlib.Path(sys.argv[1]) / f"{NAME}-{VERSION}-py3-none-any.whl"
record = []
with zipfile.ZipFile(out, "w") as whl:
    for path, data in files.items():
        whl.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
print(out)
