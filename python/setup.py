# setup.py — builds libfmmcl with the project's Autotools build (or finds an installed one) for the Python package.
"""How `pip install ./python` and `pip wheel ./python` get the C library.

FMMCL_PYTHON_LIBRARY picks:
  bundle  build libfmmcl from the source tree around this folder (bootstrap and
          configure it in place when that has not been done, then
          `make lib/libfmmcl.la`) and copy libfmmcl.so, the .cl kernels and the
          libraries it needs beyond libc and the OpenCL ICD loader into the
          package, so that a wheel works on another machine;
  system  use the installed libfmmcl that pkg-config finds (its kernels stay in
          $(pkgdatadir)/cl, where that library looks);
  auto    (default) bundle when the source tree is there, else system.
"""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1 has it in the wheel package
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PREREQS = ("build-essential autoconf automake libtool pkg-config ocl-icd-opencl-dev "
           "opencl-c-headers libclblast-dev")

# Libraries every target machine has (or must supply itself: the OpenCL ICD
# loader and its drivers), which a wheel therefore does not carry.
SYSTEM_LIBS = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "ld-linux",
               "linux-vdso", "libOpenCL.so", "libstdc++.so", "libgcc_s.so")


def log(msg):
    print(f"fmmcl setup: {msg}", file=sys.stderr, flush=True)


def run(cmd, cwd):
    log(f"{' '.join(cmd)}  (in {cwd})")
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-6000:])
        raise SystemExit(f"fmmcl setup: '{' '.join(cmd)}' failed (exit {p.returncode}) in {cwd}. "
                         f"The C library's build needs (Debian/Ubuntu): apt-get install {PREREQS}")
    return p.stdout


def source_tree():
    ok = all(os.path.exists(os.path.join(TOP, f)) for f in ("configure.ac", "lib/fmmcl.h", "cl"))
    return TOP if ok else None


def build_library(top):
    """Builds lib/libfmmcl.la in the source tree (its own configuration when it has
    one); returns the path of the shared library."""
    if not os.path.exists(os.path.join(top, "config.status")):
        if not os.path.exists(os.path.join(top, "configure")):
            run(["./bootstrap"], top)
        run(["./configure", "--quiet"], top)
    jobs = str(os.cpu_count() or 2)
    run(["make", "-j" + jobs, "lib/libfmmcl.la"], top)
    so = os.path.join(top, "lib", ".libs", "libfmmcl.so")
    if not os.path.exists(so):
        raise SystemExit(f"fmmcl setup: the build made no {so}")
    return os.path.realpath(so)


def needed_libraries(so):
    """(soname, path) of the shared libraries so loads that a bare machine may lack."""
    try:
        out = subprocess.run(["ldd", so], stdout=subprocess.PIPE, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            if not any(parts[0].startswith(s) for s in SYSTEM_LIBS):
                libs.append((parts[0], parts[2]))
    return libs


def installed_library():
    """The path of the libfmmcl.so that pkg-config's fmmcl names, or None."""
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "fmmcl"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    found = sorted(glob.glob(os.path.join(libdir, "libfmmcl.so*")))
    return found[0] if found else None


class build_with_library(build_py):
    """build_py that also puts the C library (or where to find it) into the package."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "fmmcl")
        mode = os.environ.get("FMMCL_PYTHON_LIBRARY", "auto")
        if mode not in ("auto", "bundle", "system"):
            raise SystemExit(f"FMMCL_PYTHON_LIBRARY={mode}: use bundle, system or auto")
        top = source_tree()
        if mode == "bundle" and not top:
            raise SystemExit("FMMCL_PYTHON_LIBRARY=bundle needs the libfmmcl source tree "
                             f"around {HERE}")
        if mode == "system" or not top:
            self.use_installed(dest)
        else:
            self.bundle(top, dest)

    def use_installed(self, dest):
        so = installed_library()
        if not so:
            raise SystemExit("fmmcl setup: no installed libfmmcl (pkg-config fmmcl) and no source "
                             "tree to build one from: install libfmmcl first (./configure && make "
                             "&& make install) or pip install from the source tree's python/")
        log(f"using the installed {so}")
        with open(os.path.join(dest, "_build_config.py"), "w") as f:
            f.write("# _build_config.py — written by setup.py: the installed libfmmcl to load.\n")
            f.write(f"LIBRARY = {so!r}\n")

    def bundle(self, top, dest):
        so = build_library(top)
        bundled = os.path.join(dest, "_bundled")
        shutil.rmtree(bundled, ignore_errors=True)
        os.makedirs(bundled)
        shutil.copy2(so, os.path.join(bundled, "libfmmcl.so"))
        for soname, path in needed_libraries(so):
            shutil.copy2(path, os.path.join(bundled, soname))
            log(f"bundling {soname} ({path})")
        src_cl = os.path.join(top, "cl")
        shutil.copytree(src_cl, os.path.join(bundled, "cl"),
                        ignore=lambda d, files: [f for f in files if not (
                            f.endswith((".cl", ".h")) or os.path.isdir(os.path.join(d, f)))])
        log(f"bundled {so} and the kernels of {src_cl}")


cmdclass = {"build_py": build_with_library}

if bdist_wheel is not None:
    class platform_wheel(bdist_wheel):
        """Tags the wheel for this platform (it carries a shared library) but any
        Python 3: ctypes needs no extension ABI."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = platform_wheel

setup(cmdclass=cmdclass)
