"""`pip install .`: builds the extension ctower._ctower with CMake (the
library as `cmake -S . -B build` builds it, without the tests) and installs
it with the package's modules (python/ctower). CTOWER_CMAKE_ARGS adds
arguments to CMake's configure step (e.g. "-DCTOWER_CUDA=off");
CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default: every core)."""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        source = os.path.dirname(os.path.abspath(__file__))
        build = os.path.join(os.path.abspath(self.build_temp), "cmake")
        subprocess.check_call(
            ["cmake", "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
             "-DCTOWER_TESTS=OFF", "-DCTOWER_MPI=off", "-DCTOWER_PYTHON=on",
             "-DPython3_EXECUTABLE=" + sys.executable]
            + shlex.split(os.environ.get("CTOWER_CMAKE_ARGS", "")))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build, "--target", "ctower_python",
                               "-j", jobs])
        built = glob.glob(os.path.join(build, "python", "ctower", "_ctower*.so"))
        if len(built) != 1:
            raise RuntimeError("the build made no extension ctower._ctower in %s" % build)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    packages=["ctower", "ctower.compat", "ctower.compat.v1", "ctower.compat.v1.examples",
              "ctower.compat.v1.examples.tutorials",
              "ctower.compat.v1.examples.tutorials.mnist"],
    package_dir={"": "python"},
    ext_modules=[Extension("ctower._ctower", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
