# _names.py — the one table of names the Python package gives fmmcl.h's enums.
"""Names <-> values of the C library's enums, mirrored from lib/fmmcl.h.

Kept in this one place until the library exports its own name functions.
"""

from .errors import InvalidArgumentError

# fmmcl_status, in enum order.
STATUS = (
    "SUCCESS", "ERROR_NULL_POINTER", "ERROR_INVALID_ARGUMENT", "ERROR_EMPTY_INPUT",
    "ERROR_NONFINITE_INPUT", "ERROR_UNSUPPORTED", "ERROR_OUT_OF_MEMORY", "ERROR_NO_DEVICE",
    "ERROR_DEVICE_NOT_FOUND", "ERROR_KERNEL_NOT_FOUND", "ERROR_BUILD_FAILED", "ERROR_OPENCL",
    "ERROR_IO", "ERROR_CORRUPT_FILE", "ERROR_INTERNAL", "ERROR_NONFINITE_OUTPUT",
)

# fmmcl_kernel
LAPLACE_3D, GAUSSIAN, LAPLACE_2D, YUKAWA_3D, HELMHOLTZ_3D, STOKES_3D = 0, 1, 2, 3, 4, 5

# fmmcl_bbfmm_kernel
BBFMM_PLAN_KERNEL, BBFMM_LAPLACE, BBFMM_INV_R2, BBFMM_GAUSSIAN, BBFMM_MULTIQUADRIC, \
    BBFMM_INV_MULTIQUADRIC, BBFMM_YUKAWA, BBFMM_USER = range(8)

# kernel= names, as the fmmcl program spells them: (fmmcl_kernel, fmmcl_bbfmm_kernel).
# The last four are the black-box FMM's own functions (3D, potential only).
KERNELS = {
    "laplace3d": (LAPLACE_3D, BBFMM_PLAN_KERNEL),
    "gaussian": (GAUSSIAN, BBFMM_PLAN_KERNEL),
    "laplace2d": (LAPLACE_2D, BBFMM_PLAN_KERNEL),
    "yukawa3d": (YUKAWA_3D, BBFMM_PLAN_KERNEL),
    "helmholtz3d": (HELMHOLTZ_3D, BBFMM_PLAN_KERNEL),
    "stokes3d": (STOKES_3D, BBFMM_PLAN_KERNEL),
    "inv_r2": (LAPLACE_3D, BBFMM_INV_R2),
    "multiquadric": (LAPLACE_3D, BBFMM_MULTIQUADRIC),
    "inverse_multiquadric": (LAPLACE_3D, BBFMM_INV_MULTIQUADRIC),
    "yukawa": (LAPLACE_3D, BBFMM_YUKAWA),
}

# fmmcl_method, in enum order.
METHODS = ("direct", "treecode", "fmm", "fgt", "bbfmm", "auto", "cutoff")
DIRECT, TREECODE, FMM, FGT, BBFMM, AUTO, CUTOFF = range(7)

# fmmcl_precision
PRECISIONS = ("single", "double")

# fmmcl_schedule, in enum order.
SCHEDULES = ("auto", "gpu", "cpu", "hybrid1", "hybrid2")

# fmmcl_vendor, in enum order.
VENDORS = ("nvidia", "amd", "intel", "pocl", "other")

# What fmmcl_plan_counts reports, in the order the header lists them.
PHASES = ("p2p", "p2m", "m2m", "m2l", "l2l", "l2p", "m2p", "p2l")


def lookup(table, name, what):
    """The value of name in table (a tuple or dict), or an error listing the choices."""
    key = name.lower() if isinstance(name, str) else name
    if isinstance(table, dict):
        if key in table:
            return table[key]
    elif key in table:
        return table.index(key)
    choices = ", ".join(table)
    raise InvalidArgumentError(f"unknown {what} {name!r}: choose one of {choices}")
