# Builds grove_torch, grove's torch.distributed backend, against the torch installed in the
# running environment (torch's bundled pybind11; install with --no-build-isolation) and
# against libgrove from this repository's build (GROVE_BUILD_DIR, default ../build, made by
# `make` at the repository root). libgrove is linked in statically with its symbols
# hidden, so the module needs nothing from grove at run time.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)
build_dir = os.path.abspath(os.environ.get("GROVE_BUILD_DIR", os.path.join(repo, "build")))
library = os.path.join(build_dir, "lib", "libgrove.a")
if not os.path.exists(library):
    raise SystemExit(f"grove_torch: {library} not found; build grove first (`make` at the "
                     "repository root, or set GROVE_BUILD_DIR to a grove build directory)")

with open(os.path.join(repo, "include", "grove", "version.hpp")) as header:
    version = next(line.split('"')[1] for line in header if "GROVE_VERSION_STRING" in line)

sources = ["torch_store.cpp", "progress.cpp", "dtypes.cpp", "backend.cpp", "backend_moves.cpp",
           "backend_p2p.cpp", "module.cpp"]

setup(
    name="grove_torch",
    version=version,
    description="grove as a torch.distributed backend: init_process_group(backend='grove')",
    packages=["grove_torch"],
    ext_modules=[
        CppExtension(
            "grove_torch._C",
            [os.path.join("csrc", s) for s in sources],
            include_dirs=[os.path.join(repo, "include")],
            extra_compile_args=["-std=c++20", "-O2"],
            extra_objects=[library],
            libraries=["crypto"],
            extra_link_args=["-Wl,--exclude-libs,ALL"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
