"""The _fxio extension for a pip install (pyproject.toml): _fxio.cpp and
libfxio's sources (../src), one module, built for the Python that runs pip.
The same flags as CMake's fxio_obj (ctl/fxio/CMakeLists.txt): C++20, hidden
visibility, io_uring for the staged path where liburing is found."""
import ctypes.util
import os

import pybind11
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SRC = os.path.join("..", "src")  # relative: setuptools wants them so

with open(os.path.join(TOP, "VERSION"), encoding="ascii") as f:
    VERSION = f.read().strip()

sources = ["_fxio.cpp"] + sorted(os.path.join(SRC, s)
                                 for s in os.listdir(os.path.join(HERE, SRC))
                                 if s.endswith(".cpp"))
macros, libraries = [], ["dl"]
if ctypes.util.find_library("uring"):
    macros.append(("FXIO_HAVE_LIBURING", None))
    libraries.append("uring")

setup(
    version=VERSION,
    ext_modules=[Extension(
        "fxio._fxio",
        sources=sources,
        include_dirs=[pybind11.get_include(),
                      os.path.join(HERE, "..", "include"),
                      os.path.join(HERE, SRC),
                      os.path.join(TOP, "kmod", "include", "uapi"),
                      os.path.join(TOP, "kmod")],
        define_macros=macros,
        libraries=libraries,
        extra_compile_args=["-std=c++20", "-fvisibility=hidden", "-pthread"],
        extra_link_args=["-pthread"],
        language="c++",
    )],
)
