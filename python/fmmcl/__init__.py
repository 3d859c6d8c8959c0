# __init__.py — the fmmcl package: fast N-body sums on OpenCL devices from NumPy.
"""fmmcl: fast N-body summation (direct, Barnes-Hut treecode, FMM, fast Gauss
transform, black-box FMM) on any OpenCL device, over libfmmcl.

    >>> import numpy as np, fmmcl
    >>> x = np.random.rand(100000, 3); q = np.random.rand(100000)
    >>> phi, grad = fmmcl.evaluate(x, q, method="fmm", tol=1e-6)

Plans keep their tree and kernels for new charges:

    >>> with fmmcl.Plan(fmmcl.Context("cpu"), x, method="fmm") as plan:
    ...     phi, grad = plan.execute(q)
    ...     print(plan.timings())

Kernels: laplace3d (1/r), laplace2d (-log r), gaussian (exp(-r^2/(2 sigma^2)),
dim 1..8), and the bbFMM's inv_r2, multiquadric, inverse_multiquadric, yukawa
(kernel_param= c) or expr="exp(-2*r)/r"; through Plan.evaluate and fields():
laplace3d with dipoles and Hessians, helmholtz3d (exp(ikr)/r, wavenumber= complex k),
stokes3d (Stokeslets, stresslets, pressure). Methods: auto, direct, treecode,
fmm, fgt, bbfmm. Every failure raises a subclass of fmmcl.Error.
"""

from ._core import (Context, Device, Fields, Plan, Result, devices, evaluate, fields, reference,
                    reference_fields, relative_error)
from ._names import KERNELS as _KERNELS, METHODS as _METHODS
from .errors import (BuildError, CorruptFileError, DeviceNotFoundError, EmptyInputError, Error,
                     FileError, InternalError, InvalidArgumentError, KernelNotFoundError,
                     LibraryNotFoundError, NoDeviceError, NonFiniteInputError, NonFiniteOutputError,
                     NullPointerError, OpenCLError, OutOfMemoryError, UnsupportedError)

__version__ = "0.1.0"

#: kernel= names
KERNELS = tuple(_KERNELS)
#: method= names
METHODS = tuple(_METHODS)

__all__ = ["Context", "Device", "Fields", "Plan", "Result", "devices", "evaluate", "fields",
           "reference", "reference_fields", "relative_error", "KERNELS", "METHODS", "Error", "BuildError", "CorruptFileError",
           "DeviceNotFoundError", "EmptyInputError", "FileError", "InternalError",
           "InvalidArgumentError", "KernelNotFoundError", "LibraryNotFoundError",
           "NoDeviceError", "NonFiniteInputError", "NonFiniteOutputError", "NullPointerError", "OpenCLError",
           "OutOfMemoryError", "UnsupportedError"]
