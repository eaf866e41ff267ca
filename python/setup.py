"""Puts libsmelt.so inside the package when it is built.

The library comes from $SMELT_LIB, else from the repository's Release build
(build/libsmelt.so, made by scripts/build.sh).  The wheel is tagged for this
platform since it carries native code.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def find_library():
    path = os.environ.get("SMELT_LIB") or os.path.join(HERE, "..", "build", "libsmelt.so")
    if not os.path.isfile(path):
        raise SystemExit(f"smelt: libsmelt.so not found at '{path}': run `bash scripts/build.sh` "
                         "in the repository, or set SMELT_LIB to the library's path")
    return path


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "smelt", "libsmelt.so")
        shutil.copyfile(find_library(), target)


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=NativeDistribution)
