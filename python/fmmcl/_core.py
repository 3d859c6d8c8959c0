# _core.py — devices, Context, Plan, evaluate and reference over the C library's plans.
"""The Python API proper: arrays in, NumPy arrays out, errors as fmmcl.Error."""

import ctypes
import math
import threading
from collections import namedtuple

import numpy as np

from . import _names as names
from ._lib import DeviceInfo, PhaseTime, PlanInfo, PlanOptions, SourcesData, TargetsData, lib
from .errors import Error, InvalidArgumentError, from_status

Result = namedtuple("Result", "potential gradient")
Result.__doc__ = """What a plan computes: potential of shape (M,), and gradient of shape
(M, dim) with respect to the target position, or None when it was not asked for."""

Fields = namedtuple("Fields", "potential gradient hessian velocity pressure")
Fields.__doc__ = """What Plan.evaluate computes, None where not asked for: potential (M,)
(complex for helmholtz3d), gradient (M, 3) (complex for helmholtz3d), hessian (M, 6)
as xx, yy, zz, xy, xz, yz (laplace3d with hessian=True), velocity (M, 3) and
pressure (M,) (stokes3d, pressure with pressure=True)."""

Device = namedtuple("Device", "index selector name platform vendor type driver version "
                    "compute_units global_mem_bytes local_mem_bytes max_work_group_size has_fp64")
Device.__doc__ = """An OpenCL device as the library sees it; selector ("P:D") picks it."""


def _text(raw):
    return raw.decode("utf-8", "replace") if raw else ""


def _check(status, ctx_handle=None):
    """Raises the fmmcl.Error subclass of a nonzero status with the library's message."""
    if status:
        L = lib()
        raise from_status(status, _text(L.fmmcl_strerror(status)),
                          _text(L.fmmcl_last_error(ctx_handle)))


def _device(info, index):
    kind = "gpu" if info.is_gpu else "cpu" if info.is_cpu else "other"
    vendor = names.VENDORS[info.vendor] if 0 <= info.vendor < len(names.VENDORS) else "other"
    return Device(index, f"{info.platform_index}:{info.device_index}", _text(info.device_name),
                  _text(info.platform_name), vendor, kind, _text(info.driver_version),
                  _text(info.device_version), info.compute_units, info.global_mem_bytes,
                  info.local_mem_bytes, info.max_work_group_size, bool(info.has_fp64))


def devices():
    """Every OpenCL device on every platform, in the order fmmcl-info lists them."""
    L = lib()
    count = ctypes.c_size_t()
    _check(L.fmmcl_devices_list(None, 0, ctypes.byref(count)))
    infos = (DeviceInfo * max(count.value, 1))()
    _check(L.fmmcl_devices_list(infos, count.value, ctypes.byref(count)))
    return [_device(infos[i], i) for i in range(count.value)]


def _selector(device):
    if device is None:
        return None
    if isinstance(device, Device):
        device = device.selector
    if not isinstance(device, str):
        raise InvalidArgumentError(f"device must be a selector string (gpu, cpu, P:D or a name), "
                                   f"a Device or None, not {type(device).__name__}")
    return device.encode()


class _Owned:
    """A library handle, released by close(), on leaving a with block, or when collected."""
    _destroy = None  # the fmmcl_*_destroy function's name

    def close(self):
        """Releases the handle now (a context's plans must be closed first)."""
        if self._handle is not None and self._handle.value:
            getattr(lib(), self._destroy)(self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Context(_Owned):
    """An open device: Context(device=None) takes "gpu", "cpu", "P:D", a substring of
    the device or platform name, a Device from devices(), or None for FMMCL_DEVICE
    (else the first GPU, else the first CPU). Plans keep their context alive."""
    _destroy = "fmmcl_context_destroy"

    def __init__(self, device=None):
        self._handle = None
        handle = ctypes.c_void_p()
        _check(lib().fmmcl_context_create(ctypes.byref(handle), _selector(device)))
        self._handle = handle
        info = DeviceInfo()
        _check(lib().fmmcl_context_device(handle, ctypes.byref(info)), handle)
        self.device = _device(info, None)

    def __repr__(self):
        d = self.device
        return f"<fmmcl.Context {d.selector} {d.name!r} ({d.type}, {d.vendor})>"


_default_contexts = {}
_default_lock = threading.Lock()


def _context_for(device):
    """One shared context per selector for the one-shot calls: opening a device
    costs more than a small sum."""
    if isinstance(device, Context):
        return device
    key = device.selector if isinstance(device, Device) else device
    with _default_lock:
        ctx = _default_contexts.get(key)
        if ctx is None:
            ctx = _default_contexts[key] = Context(device)
        return ctx


def _points(a, what, dim=None):
    """(array, n, dim): coordinates as C-ordered float64 (N, dim), converted at most once."""
    try:
        arr = np.asarray(a)
    except Exception as e:  # ragged lists and the like
        raise InvalidArgumentError(f"{what}: not an array of numbers ({e})") from None
    _dtype_ok(arr, what)
    if arr.ndim == 1 and dim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise InvalidArgumentError(f"{what} must have shape (N, dim), got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise InvalidArgumentError(f"{what} must have shape (N, {dim}), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidArgumentError(f"{what}: no points (shape {arr.shape})")
    return np.ascontiguousarray(arr, dtype=np.float64), arr.shape[0], arr.shape[1]


def _dtype_ok(arr, what):
    if arr.dtype.kind not in "fiu" or arr.dtype == np.float16 or arr.dtype.itemsize > 8:
        raise InvalidArgumentError(f"{what} must hold real numbers (float32 or float64), "
                                   f"got dtype {arr.dtype}")


def _charges(q, n):
    arr = np.asarray(q)
    _dtype_ok(arr, "charges")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.shape != (n,):
        raise InvalidArgumentError(f"charges must have shape ({n},), one per source, "
                                   f"got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _dptr(arr):
    return None if arr is None else arr.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _gradient_default(kernel, method, expr):
    """On where every method of the kernel gives it: the Laplace kernels, bar the bbFMM."""
    k, bb = names.KERNELS[kernel]
    return (expr is None and bb == names.BBFMM_PLAN_KERNEL and k not in (names.GAUSSIAN,
                                                                          names.STOKES_3D)
            and method != names.BBFMM)


def _kernel_dim(kernel_id, bb, expr):
    if expr is not None or bb != names.BBFMM_PLAN_KERNEL or kernel_id in (
            names.LAPLACE_3D, names.YUKAWA_3D, names.HELMHOLTZ_3D, names.STOKES_3D):
        return 3
    return 2 if kernel_id == names.LAPLACE_2D else None  # Gaussian: from the array


def _options(kernel="laplace3d", method="auto", tol=None, precision="double", gradient=None,
             sigma=1.0, softening=0.0, order=0, theta=0.0, leaf_size=0, kernel_param=0.0,
             expr=None, dim=None, dipoles=False, hessian=False, wavenumber=0.0, stresslets=False,
             pressure=False):
    """PlanOptions from keyword options, each checked for type; ranges are the library's."""
    if expr is not None and not isinstance(expr, str):
        raise InvalidArgumentError("expr must be an OpenCL C expression string")
    kernel = kernel.lower() if isinstance(kernel, str) else kernel
    kid, bb = names.lookup(names.KERNELS, kernel, "kernel")
    if expr is not None:
        if kid != names.LAPLACE_3D:
            raise InvalidArgumentError("expr= is a 3D kernel of the bbFMM: leave kernel at "
                                       "'laplace3d'")
        bb = names.BBFMM_USER
    m = names.lookup(names.METHODS, method, "method")
    opt = PlanOptions()
    _check(lib().fmmcl_plan_options_init(ctypes.byref(opt), kid))
    opt.method = m
    opt.precision = names.lookup(names.PRECISIONS, precision, "precision")
    if dim is not None:
        opt.dim = dim
    if gradient is None:
        gradient = _gradient_default(kernel, m, expr)
    opt.gradient = 1 if gradient else 0
    for field, value in (("softening", softening), ("sigma", sigma), ("theta", theta),
                         ("kernel_param", kernel_param), ("tolerance", tol or 0.0)):
        try:
            setattr(opt, field, float(value))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{'tol' if field == 'tolerance' else field} must be a "
                                       f"number, got {value!r}") from None
    for field, value in (("order", order), ("leaf_size", leaf_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidArgumentError(f"{field} must be an integer, got {value!r}")
        setattr(opt, field, int(value))
    try:
        k = complex(wavenumber)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"wavenumber must be a number (complex allowed), "
                                   f"got {wavenumber!r}") from None
    opt.wavenumber_re, opt.wavenumber_im = k.real, k.imag
    for field, value in (("dipoles", dipoles), ("hessian", hessian), ("stresslets", stresslets),
                         ("pressure", pressure)):
        setattr(opt, field, 1 if value else 0)
    opt.bbfmm_kernel = bb
    expr_bytes = expr.encode() if expr is not None else None
    opt.kernel_expression = expr_bytes
    return opt, expr_bytes


class Plan(_Owned):
    """A plan, as in C: built once for a set of sources and targets (tree, lists,
    kernels), executed with any number of charge vectors.

    Plan(ctx, sources, targets=None, kernel="laplace3d", method="auto", tol=None,
         precision="double", gradient=None, sigma=1.0, softening=0.0, order=0,
         theta=0.0, leaf_size=0, kernel_param=0.0, expr=None, dipoles=False,
         hessian=False, wavenumber=0.0, stresslets=False, pressure=False)

    sources: (N, dim) array-like (dim 3 for laplace3d and the bbFMM kernels, 2 for
    laplace2d, 1..8 for gaussian, where a 1-D array means dim 1); targets: (M, dim)
    or None for the sources themselves. ctx is a Context, a device selector or None.
    gradient None means on for the Laplace kernels (not through the bbFMM), off
    otherwise. tol None is the library's default (1e-6 in double, 1e-4 in single;
    the FGT's tol bounds the error per unit of sum |q|). helmholtz3d (wavenumber= a
    complex k with Im k >= 0), stokes3d and laplace3d with dipoles or hessian are
    summed with evaluate(), not execute(), and by method="direct" (or "auto"); laplace3d
    dipoles and Hessians also by "fmm" and "treecode", helmholtz3d by "fmm", stokes3d
    (Stokeslets and stresslets) by "fmm".
    """
    _destroy = "fmmcl_plan_destroy"

    def __init__(self, ctx, sources, targets=None, **options):
        self._handle = None
        self._ctx = ctx = _context_for(ctx)
        kernel = options.get("kernel", "laplace3d")
        kid, bb = names.lookup(names.KERNELS, kernel, "kernel")
        dim = _kernel_dim(kid, bb, options.get("expr"))
        src, n, dim = _points(sources, "sources", dim if dim is not None else
                              (1 if np.ndim(sources) == 1 else None))
        tgt, m = None, n
        if targets is not None:
            tgt, m, _ = _points(targets, "targets", dim)
        opt, self._expr = _options(dim=dim, **options)
        self._create(ctx, opt, src, n, tgt, m)
        self._points = (src, tgt)  # for rounding_estimate: the plan keeps no copy
        self.n_sources, self.n_targets, self.dim = n, m, dim
        self.kernel = kernel
        self.options = dict(options)

    def _create(self, ctx, opt, src, n, tgt, m):
        handle = ctypes.c_void_p()
        _check(lib().fmmcl_plan_create(ctx._handle, ctypes.byref(opt), n, _dptr(src), m,
                                       _dptr(tgt), ctypes.byref(handle)), ctx._handle)
        self._handle = handle
        self._opt = opt

    @classmethod
    def hybrid(cls, ctx_a, ctx_b, sources, targets=None, schedule="auto", **options):
        """A 3D Laplace FMM split between two devices (fmmcl_plan_create_hybrid):
        schedule "auto", "gpu" (all on ctx_a), "cpu" (all on ctx_b), "hybrid1"
        (near field on a, far on b) or "hybrid2"."""
        self = cls.__new__(cls)
        self._handle = None
        ctx_a = _context_for(ctx_a)
        ctx_b = _context_for(ctx_b) if ctx_b is not None else None
        self._ctx, self._ctx_b = ctx_a, ctx_b
        options.setdefault("method", "fmm")
        src, n, _ = _points(sources, "sources", 3)
        tgt, m = None, n
        if targets is not None:
            tgt, m, _ = _points(targets, "targets", 3)
        opt, self._expr = _options(**options)
        s = names.lookup(names.SCHEDULES, schedule, "schedule")
        handle = ctypes.c_void_p()
        _check(lib().fmmcl_plan_create_hybrid(ctx_a._handle, ctx_b._handle if ctx_b else None,
                                              ctypes.byref(opt), n, _dptr(src), m, _dptr(tgt), s,
                                              ctypes.byref(handle)), ctx_a._handle)
        self._handle, self._opt = handle, opt
        self._points = (src, tgt)
        self.n_sources, self.n_targets, self.dim = n, m, 3
        self.kernel, self.options = options.get("kernel", "laplace3d"), dict(options)
        return self

    def _live(self):
        if self._handle is None:
            raise InvalidArgumentError("the plan is closed")
        return self._handle

    @property
    def method(self):
        """The method asked for ("auto" stays "auto")."""
        return names.METHODS[self._opt.method]

    @property
    def precision(self):
        return names.PRECISIONS[self._opt.precision]

    @property
    def gradient(self):
        return bool(self._opt.gradient)

    @property
    def schedule(self):
        """A hybrid plan's schedule ("auto" resolved); None for other plans."""
        s = ctypes.c_int()
        if lib().fmmcl_plan_schedule(self._live(), ctypes.byref(s)):
            return None
        return names.SCHEDULES[s.value]

    def execute(self, charges):
        """Sums with charges (N,); returns Result(potential (M,), gradient (M, dim) or None)."""
        h = self._live()
        q = _charges(charges, self.n_sources)
        pot = np.empty(self.n_targets)
        grad = np.empty((self.n_targets, self.dim)) if self._opt.gradient else None
        _check(lib().fmmcl_plan_execute(h, _dptr(q), _dptr(pot), _dptr(grad)), self._ctx._handle)
        return Result(pot, grad)

    __call__ = execute

    def update_positions(self, sources, targets=None):
        """New positions for the same numbers of sources and targets (a time step):
        the plan is rebuilt for them with its options (fmmcl_plan_update_positions).
        targets must be given exactly when the plan was made with targets. On an
        error the plan keeps its old positions."""
        h = self._live()
        src, n, _ = _points(sources, "sources", self.dim)
        if n != self.n_sources:
            raise InvalidArgumentError(f"sources: {n} points, the plan has {self.n_sources}")
        tgt = None
        if targets is not None:
            tgt, m, _ = _points(targets, "targets", self.dim)
            if m != self.n_targets:
                raise InvalidArgumentError(f"targets: {m} points, the plan has {self.n_targets}")
        _check(lib().fmmcl_plan_update_positions(h, _dptr(src), _dptr(tgt)), self._ctx._handle)
        self._points = (src, tgt)
    def evaluate(self, charges=None, dipoles=None, forces=None, stresslet_strengths=None,
                 stresslet_orientations=None):
        """The general sum (fmmcl_plan_evaluate): charges (N,) (complex for helmholtz3d),
        dipoles (N, 3) (complex for helmholtz3d; needs dipoles=True), forces (N, 3) and
        stresslet strengths and orientations (N, 3) each (stokes3d; stresslets need
        stresslets=True). Returns Fields with what the plan's options ask for."""
        h = self._live()
        src, keep = _sources_data(self._opt, self.n_sources, charges, dipoles, forces,
                                  stresslet_strengths, stresslet_orientations)
        out, arrays = _targets_data(self._opt, self.n_targets)
        _check(lib().fmmcl_plan_evaluate(h, ctypes.byref(src), ctypes.byref(out)),
               self._ctx._handle)
        return _fields(self._opt, arrays)

    def timings(self):
        """{phase: seconds} of the last execution, and "build" for plan creation."""
        h = self._live()
        count = ctypes.c_size_t()
        _check(lib().fmmcl_plan_timings(h, None, 0, ctypes.byref(count)), self._ctx._handle)
        buf = (PhaseTime * max(count.value, 1))()
        _check(lib().fmmcl_plan_timings(h, buf, count.value, ctypes.byref(count)),
               self._ctx._handle)
        out = {}
        for i in range(count.value):
            name = _text(buf[i].name)
            out[name] = out.get(name, 0.0) + buf[i].seconds
        return out

    def counts(self):
        """{phase: work of one execution} (pairs, expansions, translations; see fmmcl.h)."""
        h = self._live()
        out = {}
        for phase in names.PHASES:
            w = ctypes.c_double()
            _check(lib().fmmcl_plan_counts(h, phase.encode(), ctypes.byref(w)), self._ctx._handle)
            out[phase] = w.value
        return out

    def error_bound(self):
        """The bound b with |error(y)| <= b * sum |q| at every target (FGT, cutoff; 0 for direct);
        UnsupportedError for methods that promise none."""
        b = ctypes.c_double()
        _check(lib().fmmcl_plan_error_bound(self._live(), ctypes.byref(b)), self._ctx._handle)
        return b.value

    def info(self):
        """What runs: {"method": the method ("auto" resolved), "order": the expansion
        order (0 for direct sums), "precision", "theta": the treecode's theta (0 resolved;
        0 for other methods), "leaf_size": the 3D FMM's and treecode's points per leaf (0
        resolved; 0 for other methods)}."""
        i = PlanInfo()
        _check(lib().fmmcl_plan_describe(self._live(), ctypes.byref(i)), self._ctx._handle)
        return {"method": names.METHODS[i.method], "order": i.order,
                "precision": names.PRECISIONS[i.precision], "theta": i.theta,
                "leaf_size": i.leaf_size}

    def rounding_estimate(self):
        """(estimate, distance): the typical relative error, from rounding coordinates to
        the plan's precision, of the gradient term of the closest source-target pair,
        and that pair's distance (NaN when there is none). An estimate above the
        tolerance means the precision cannot deliver it there: use precision="double"."""
        e, d = ctypes.c_double(), ctypes.c_double()
        src, tgt = self._points
        _check(lib().fmmcl_plan_rounding_estimate(self._live(), _dptr(src), _dptr(tgt),
                                                  ctypes.byref(e), ctypes.byref(d)),
               self._ctx._handle)
        return e.value, d.value

    def build_options(self):
        """The OpenCL build options of the plan's kernels (tuned -D values included)."""
        buf = ctypes.create_string_buffer(4096)
        _check(lib().fmmcl_plan_build_options(self._live(), buf, len(buf)), self._ctx._handle)
        return _text(buf.value)

    def __repr__(self):
        return (f"<fmmcl.Plan {self.kernel} {self.method} {self.precision}: "
                f"{self.n_sources} sources, {self.n_targets} targets, dim {self.dim}>")


def evaluate(sources, charges, targets=None, kernel="laplace3d", method="auto", tol=None,
             precision="double", gradient=None, sigma=1.0, device=None, **options):
    """One sum: a plan made, executed once and closed. Returns Result(potential,
    gradient). device: a Context, a selector ("gpu", "cpu", "P:D", a name) or None
    (FMMCL_DEVICE, else the first GPU, else the first CPU). Other options as Plan."""
    with Plan(device, sources, targets, kernel=kernel, method=method, tol=tol,
              precision=precision, gradient=gradient, sigma=sigma, **options) as plan:
        return plan.execute(charges)


def reference(sources, charges, targets=None, kernel="laplace3d", gradient=None, sigma=1.0,
              softening=0.0):
    """The library's plain-C double-precision direct sum (OpenMP on the host) of
    laplace3d, laplace2d or gaussian: what device results are checked against."""
    kid, bb = names.lookup(names.KERNELS, kernel, "kernel")
    if bb != names.BBFMM_PLAN_KERNEL:
        raise InvalidArgumentError(f"reference() sums laplace3d, laplace2d and gaussian, "
                                   f"not {kernel!r}")
    dim = _kernel_dim(kid, bb, None)
    src, n, dim = _points(sources, "sources", dim if dim is not None else
                          (1 if np.ndim(sources) == 1 else None))
    tgt, m = src, n
    if targets is not None:
        tgt, m, _ = _points(targets, "targets", dim)
    q = _charges(charges, n)
    opt, _ = _options(kernel=kernel, method="direct", gradient=gradient, sigma=sigma,
                      softening=softening, dim=dim)
    pot = np.empty(m)
    grad = np.empty((m, dim)) if opt.gradient else None
    _check(lib().fmmcl_reference_direct(ctypes.byref(opt), n, _dptr(src), _dptr(q), m,
                                        _dptr(tgt), _dptr(pot), _dptr(grad)))
    return Result(pot, grad)


def _strengths(v, n, per, what, complex_ok):
    """v as C-ordered float64 of n * per (re, im interleaved when complex_ok), or None."""
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.dtype.kind == "c" and not complex_ok:
        raise InvalidArgumentError(f"{what} must be real for this kernel")
    if arr.dtype.kind != "c":
        _dtype_ok(arr, what)
    shape = (n,) if per == 1 else (n, per)
    if arr.shape != shape and not (per == 1 and arr.shape == (n, 1)):
        raise InvalidArgumentError(f"{what} must have shape {shape}, got shape {arr.shape}")
    if complex_ok:
        return np.ascontiguousarray(arr, dtype=np.complex128).reshape(-1).view(np.float64)
    return np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)


def _sources_data(opt, n, charges, dipoles, forces, ss, so):
    """SourcesData for the plan's kernel, and the arrays it points into (kept alive)."""
    helm = opt.kernel == names.HELMHOLTZ_3D
    arrays = {"charges": _strengths(charges, n, 1, "charges", helm),
              "dipoles": _strengths(dipoles, n, 3, "dipoles", helm),
              "forces": _strengths(forces, n, 3, "forces", False),
              "stresslet_strengths": _strengths(ss, n, 3, "stresslet_strengths", False),
              "stresslet_orientations": _strengths(so, n, 3, "stresslet_orientations", False)}
    if helm:
        arrays["complex_charges"] = arrays.pop("charges")
        arrays["complex_dipoles"] = arrays.pop("dipoles")
    data = SourcesData()
    for name, arr in arrays.items():
        setattr(data, name, _dptr(arr))
    return data, arrays


def _targets_data(opt, m):
    """TargetsData of every output the options ask for, and the arrays (complex views
    for helmholtz3d)."""
    k = opt.kernel
    want = {}
    if k == names.HELMHOLTZ_3D:
        want["complex_potential"] = np.empty(m, np.complex128)
        if opt.gradient:
            want["complex_gradient"] = np.empty((m, 3), np.complex128)
    elif k == names.STOKES_3D:
        want["velocity"] = np.empty((m, 3))
        if opt.pressure:
            want["pressure"] = np.empty(m)
    else:
        want["potential"] = np.empty(m)
        if opt.gradient:
            want["gradient"] = np.empty((m, opt.dim))
        if opt.hessian:
            want["hessian"] = np.empty((m, 6))
    data = TargetsData()
    for name, arr in want.items():
        setattr(data, name, arr.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    return data, want


def _fields(opt, a):
    return Fields(a.get("potential", a.get("complex_potential")),
                  a.get("gradient", a.get("complex_gradient")), a.get("hessian"),
                  a.get("velocity"), a.get("pressure"))


def fields(sources, targets=None, kernel="laplace3d", charges=None, dipoles=None, forces=None,
           stresslet_strengths=None, stresslet_orientations=None, device=None, **options):
    """One general sum (Plan.evaluate): a plan made, evaluated once and closed. Options
    as Plan, with dipoles=, hessian=, wavenumber= (complex), stresslets=, pressure=
    as flags; dipoles= given an array also sets the flag."""
    if dipoles is not None:
        options["dipoles"] = True
    if stresslet_strengths is not None:
        options["stresslets"] = True
    options.setdefault("method", "direct")
    with Plan(device, sources, targets, kernel=kernel, **options) as plan:
        return plan.evaluate(charges, dipoles, forces, stresslet_strengths,
                             stresslet_orientations)


def reference_fields(sources, targets=None, kernel="laplace3d", charges=None, dipoles=None,
                     forces=None, stresslet_strengths=None, stresslet_orientations=None,
                     **options):
    """fields() computed by the library's plain-C double-precision reference
    (fmmcl_reference_evaluate) on the host."""
    if dipoles is not None:
        options["dipoles"] = True
    if stresslet_strengths is not None:
        options["stresslets"] = True
    src, n, _ = _points(sources, "sources", 3)
    tgt, m = None, n
    if targets is not None:
        tgt, m, _ = _points(targets, "targets", 3)
    options.setdefault("method", "direct")
    opt, _ = _options(kernel=kernel, dim=3, **options)
    data, keep = _sources_data(opt, n, charges, dipoles, forces, stresslet_strengths,
                               stresslet_orientations)
    out, arrays = _targets_data(opt, m)
    _check(lib().fmmcl_reference_evaluate(ctypes.byref(opt), n, _dptr(src), ctypes.byref(data),
                                          m, _dptr(tgt), ctypes.byref(out)))
    return _fields(opt, arrays)


def relative_error(computed, exact):
    """sqrt(sum |computed - exact|^2 / sum |exact|^2), the measure the library's tol means."""
    c, e = np.asarray(computed), np.asarray(exact)
    norm = float(np.sum(np.abs(e) ** 2))
    diff = float(np.sum(np.abs(c - e) ** 2))
    return math.sqrt(diff / norm) if norm > 0 else math.sqrt(diff)


__all__ = ["Context", "Device", "Error", "Fields", "Plan", "Result", "devices", "evaluate",
           "fields", "reference", "reference_fields", "relative_error"]
