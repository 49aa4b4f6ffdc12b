"""Windows machines on offline images made of small PE files (app/demo/pe_writer.py): the VC++ runtime in System32,
python.org's Python and a venv of it, and a torch whose DLLs need only that runtime."""

from __future__ import annotations

from app.demo.pe_writer import Export, Import, build_pe

HOME = r"C:\Users\alice"
PY = HOME + r"\AppData\Local\Programs\Python\Python312"
VENV = HOME + r"\ComfyUI\venv"
SITE = VENV + r"\Lib\site-packages"
LIB = SITE + r"\torch\lib"
SYS32 = r"C:\Windows\System32"


def vc_runtime(image, version=(14, 44, 35211, 0), folder=SYS32):
    for name in ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll"):
        image.write(f"{folder}\\{name}", build_pe(dll_name=name, file_version=version,
                                                  exports=[Export(1, "runtime_function")]))


def torch(image, version, cuda=None, imports=("c10.dll",)):
    image.torch_version_file(SITE, version, cuda)
    image.write(LIB + r"\c10.dll", build_pe(dll_name="c10.dll", exports=[Export(1, "c10_function")],
                                            imports=[Import("msvcp140.dll", ("runtime_function",))]))
    image.write(LIB + r"\torch_cpu.dll", build_pe(dll_name="torch_cpu.dll", imports=[
        Import(name, ("c10_function",)) for name in imports] + [Import("kernel32.dll", ("Sleep",))]))


def python_files(image, folder, minor=12, machine="x64", embedded=False):
    image.write(folder + r"\python.exe", build_pe(dll=False, machine=machine))
    image.write(folder + rf"\python3{minor}.dll",
                build_pe(machine=machine, dll_name=f"python3{minor}.dll", file_version=(3, minor, 4150, 1013)))
    if embedded:
        image.write(folder + rf"\python3{minor}._pth", f"python3{minor}.zip\n.\nLib\\site-packages\nimport site\n")
