# _lib.py — finds and loads libfmmcl with ctypes, and declares the fmmcl.h structs and functions used.
"""The ctypes layer: only functions declared in lib/fmmcl.h are bound.

Where the library comes from, first match wins:
  1. FMMCL_LIBRARY, the path of a libfmmcl.so (the build tree's tests use it);
  2. the copy bundled in this package (_bundled/, with its kernels in
     _bundled/cl, which is appended to FMMCL_KERNEL_PATH);
  3. the installed library recorded at build time (pkg-config's libdir);
  4. the dynamic loader's search (ctypes.util.find_library("fmmcl")).
ctypes releases the GIL around every foreign call, so other Python threads
run while a plan executes.
"""

import ctypes
import ctypes.util
import os

from .errors import LibraryNotFoundError

_HERE = os.path.dirname(os.path.abspath(__file__))
_BUNDLED = os.path.join(_HERE, "_bundled")

c_int, c_uint, c_double, c_char_p, c_size_t = (ctypes.c_int, ctypes.c_uint, ctypes.c_double,
                                               ctypes.c_char_p, ctypes.c_size_t)
c_ull = ctypes.c_ulonglong
P = ctypes.POINTER


class DeviceInfo(ctypes.Structure):
    """fmmcl_device_info"""
    _fields_ = [
        ("platform_index", c_int), ("device_index", c_int),
        ("platform_name", ctypes.c_char * 128), ("platform_vendor", ctypes.c_char * 128),
        ("device_name", ctypes.c_char * 128), ("driver_version", ctypes.c_char * 128),
        ("device_version", ctypes.c_char * 128),
        ("vendor", c_int), ("is_gpu", c_int), ("is_cpu", c_int), ("compute_units", c_uint),
        ("global_mem_bytes", c_ull), ("local_mem_bytes", c_ull),
        ("max_work_group_size", c_size_t), ("has_fp64", c_int),
    ]


class PlanOptions(ctypes.Structure):
    """fmmcl_plan_options"""
    _fields_ = [
        ("kernel", c_int), ("method", c_int), ("precision", c_int), ("dim", c_int),
        ("gradient", c_int), ("softening", c_double), ("sigma", c_double),
        ("order", c_int), ("tolerance", c_double), ("theta", c_double), ("leaf_size", c_int),
        ("bbfmm_kernel", c_int), ("kernel_param", c_double), ("kernel_expression", c_char_p),
        ("dipoles", c_int), ("hessian", c_int), ("wavenumber_re", c_double),
        ("wavenumber_im", c_double), ("stresslets", c_int), ("pressure", c_int),
        ("executions", c_int),
    ]


class SourcesData(ctypes.Structure):
    """fmmcl_sources_data"""
    _fields_ = [(name, P(c_double)) for name in (
        "charges", "dipoles", "complex_charges", "complex_dipoles", "forces",
        "stresslet_strengths", "stresslet_orientations")]


class TargetsData(ctypes.Structure):
    """fmmcl_targets_data"""
    _fields_ = [(name, P(c_double)) for name in (
        "potential", "gradient", "hessian", "complex_potential", "complex_gradient", "velocity",
        "pressure")]


class PlanInfo(ctypes.Structure):
    """fmmcl_plan_info"""
    _fields_ = [("kernel", c_int), ("method", c_int), ("precision", c_int), ("order", c_int),
                ("theta", c_double), ("leaf_size", c_int)]


class PhaseTime(ctypes.Structure):
    """fmmcl_phase_time"""
    _fields_ = [("name", c_char_p), ("seconds", c_double)]


# Opaque handles.
context_t = ctypes.c_void_p
plan_t = ctypes.c_void_p
dbl_p = P(c_double)

# name: (argument types); every one returns fmmcl_status unless listed in _RESTYPES.
_PROTOTYPES = {
    "fmmcl_strerror": (c_int,),
    "fmmcl_last_error": (context_t,),
    "fmmcl_devices_list": (P(DeviceInfo), c_size_t, P(c_size_t)),
    "fmmcl_device_select": (c_char_p, P(c_size_t)),
    "fmmcl_context_create": (P(context_t), c_char_p),
    "fmmcl_context_destroy": (context_t,),
    "fmmcl_context_device": (context_t, P(DeviceInfo)),
    "fmmcl_plan_options_init": (P(PlanOptions), c_int),
    "fmmcl_plan_create": (context_t, P(PlanOptions), c_size_t, dbl_p, c_size_t, dbl_p, P(plan_t)),
    "fmmcl_plan_create_hybrid": (context_t, context_t, P(PlanOptions), c_size_t, dbl_p, c_size_t,
                                 dbl_p, c_int, P(plan_t)),
    "fmmcl_plan_schedule": (plan_t, P(c_int)),
    "fmmcl_plan_execute": (plan_t, dbl_p, dbl_p, dbl_p),
    "fmmcl_plan_update_positions": (plan_t, dbl_p, dbl_p),
    "fmmcl_plan_evaluate": (plan_t, P(SourcesData), P(TargetsData)),
    "fmmcl_reference_evaluate": (P(PlanOptions), c_size_t, dbl_p, P(SourcesData), c_size_t, dbl_p,
                                 P(TargetsData)),
    "fmmcl_plan_destroy": (plan_t,),
    "fmmcl_plan_timings": (plan_t, P(PhaseTime), c_size_t, P(c_size_t)),
    "fmmcl_plan_counts": (plan_t, c_char_p, P(c_double)),
    "fmmcl_plan_error_bound": (plan_t, P(c_double)),
    "fmmcl_plan_build_options": (plan_t, ctypes.c_char_p, c_size_t),
    "fmmcl_plan_describe": (plan_t, P(PlanInfo)),
    "fmmcl_plan_rounding_estimate": (plan_t, dbl_p, dbl_p, P(c_double), P(c_double)),
    "fmmcl_reference_direct": (P(PlanOptions), c_size_t, dbl_p, dbl_p, c_size_t, dbl_p, dbl_p,
                               dbl_p),
}
_RESTYPES = {"fmmcl_strerror": c_char_p, "fmmcl_last_error": c_char_p}


def _kernel_dir_append(directory):
    """Appends directory to FMMCL_KERNEL_PATH: the user's own places still come first."""
    old = os.environ.get("FMMCL_KERNEL_PATH", "")
    if directory not in old.split(":"):
        os.environ["FMMCL_KERNEL_PATH"] = f"{old}:{directory}" if old else directory


def _load_bundled():
    """The bundled libfmmcl; its bundled dependencies are loaded first only if the
    system lacks them (a loaded library satisfies later needs of its soname)."""
    path = os.path.join(_BUNDLED, "libfmmcl.so")
    if os.path.isdir(os.path.join(_BUNDLED, "cl")):
        _kernel_dir_append(os.path.join(_BUNDLED, "cl"))
    try:
        return ctypes.CDLL(path)
    except OSError:
        for name in sorted(os.listdir(_BUNDLED)):
            if name.startswith("lib") and ".so" in name and not name.startswith("libfmmcl"):
                try:
                    ctypes.CDLL(os.path.join(_BUNDLED, name), mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass
        return ctypes.CDLL(path)


def _candidates():
    env = os.environ.get("FMMCL_LIBRARY")
    if env:
        yield "FMMCL_LIBRARY", lambda: ctypes.CDLL(env)
        return
    if os.path.exists(os.path.join(_BUNDLED, "libfmmcl.so")):
        yield "the bundled copy", _load_bundled
        return
    try:
        from ._build_config import LIBRARY
    except ImportError:
        LIBRARY = None
    if LIBRARY:
        yield LIBRARY, lambda: ctypes.CDLL(LIBRARY)
    found = ctypes.util.find_library("fmmcl")
    if found:
        yield found, lambda: ctypes.CDLL(found)


def _load():
    tried = []
    for where, load in _candidates():
        try:
            lib = load()
            break
        except OSError as e:
            tried.append(f"{where}: {e}")
    else:
        raise LibraryNotFoundError(
            "libfmmcl could not be loaded (" + ("; ".join(tried) or "none found: set FMMCL_LIBRARY "
            "or reinstall the package with pip install ./python") + ")",
            "libfmmcl not found")
    for name, argtypes in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, c_int)
    return lib


_lib = None


def lib():
    """The loaded library (loaded on first use, so that importing fmmcl never fails)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def library_path():
    """The file the library was loaded from (for fmmcl.info())."""
    handle = lib()
    return getattr(handle, "_name", None)
