# test_kernels.py — every kernel and method of the C API against NumPy direct sums on small sets.
import os

import numpy as np
import pytest

import fmmcl
from conftest import charges, direct, points, rel

# Rounding of a direct sum in each precision, relative L2 (N of a few hundred).
ROUND = {"double": 1e-12, "single": 2e-5}


@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("separate", [False, True])
def test_laplace3d_direct(ctx, precision, separate):
    if precision == "double" and not ctx.device.has_fp64:
        pytest.skip("no fp64")
    y, q = points(300, 3, 1), charges(300, 1)
    x = points(200, 3, 2) if separate else None
    phi, grad = fmmcl.evaluate(y, q, x, method="direct", precision=precision, device=ctx)
    ref_phi, ref_grad = direct("laplace3d", y, q, x)
    assert phi.shape == (len(ref_phi),) and grad.shape == (len(ref_phi), 3)
    assert rel(phi, ref_phi) < ROUND[precision]
    assert rel(grad, ref_grad) < ROUND[precision]


def test_laplace3d_softening(ctx, fp64):
    y, q = points(300, 3, 3), charges(300, 3)
    phi, grad = fmmcl.evaluate(y, q, method="direct", softening=0.05, device=ctx)
    ref_phi, ref_grad = direct("laplace3d", y, q, softening=0.05)
    assert rel(phi, ref_phi) < 1e-12 and rel(grad, ref_grad) < 1e-12


@pytest.mark.parametrize("precision", ["single", "double"])
def test_yukawa3d_direct(ctx, precision):
    """exp(-kappa r) / r and its gradient with respect to the target, against NumPy."""
    if precision == "double" and not ctx.device.has_fp64:
        pytest.skip("no fp64")
    kappa = 2.0
    y, q, x = points(300, 3, 21), charges(300, 21), points(200, 3, 22)
    phi, grad = fmmcl.evaluate(y, q, x, kernel="yukawa3d", kernel_param=kappa, method="direct",
                               precision=precision, device=ctx)
    d = y[None, :, :] - x[:, None, :]  # source - target
    r = np.linalg.norm(d, axis=2)
    e = np.exp(-kappa * r)
    ref_phi = (q * e / r).sum(axis=1)
    ref_grad = ((q * e * (1 + kappa * r) / r**3)[:, :, None] * d).sum(axis=1)
    assert rel(phi, ref_phi) < ROUND[precision]
    assert rel(grad, ref_grad) < ROUND[precision]


@pytest.mark.parametrize("method,tol", [("fmm", 1e-6), ("treecode", 1e-3)])
def test_laplace3d_tree_methods(ctx, fp64, method, tol):
    y, q = points(2000, 3, 4), charges(2000, 4)
    x = points(300, 3, 5)
    phi, grad = fmmcl.evaluate(y, q, x, method=method, tol=tol, device=ctx)
    ref_phi, ref_grad = direct("laplace3d", y, q, x)
    # the tolerance is the potential's relative L2 error; the gradient's within 10x
    assert rel(phi, ref_phi) <= tol
    assert rel(grad, ref_grad) <= 10 * tol


def test_laplace3d_fmm_single(ctx):
    y, q = points(2000, 3, 6), charges(2000, 6)
    phi, grad = fmmcl.evaluate(y, q, method="fmm", precision="single", tol=1e-4, device=ctx)
    ref_phi, ref_grad = direct("laplace3d", y, q)
    assert rel(phi, ref_phi) <= 1e-4 and rel(grad, ref_grad) <= 1e-3


def test_auto_is_direct_when_small(ctx, fp64):
    y, q = points(400, 3, 7), charges(400, 7)
    with fmmcl.Plan(ctx, y) as plan:          # method="auto" by default
        phi, grad = plan.execute(q)
        counts = plan.counts()
    assert plan.method == "auto"
    assert counts["p2p"] == 400 * 400 and counts["m2l"] == 0
    assert rel(phi, direct("laplace3d", y, q)[0]) < 1e-12


@pytest.mark.parametrize("method,tol", [("direct", 1e-12), ("fmm", 1e-6)])
def test_laplace2d(ctx, fp64, method, tol):
    y, q = points(1500, 2, 8), charges(1500, 8)
    phi, grad = fmmcl.evaluate(y, q, kernel="laplace2d", method=method, tol=1e-6, device=ctx)
    ref_phi, ref_grad = direct("laplace2d", y, q)
    assert grad.shape == (1500, 2)
    assert rel(phi, ref_phi) <= tol and rel(grad, ref_grad) <= 10 * tol


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_gaussian_direct(ctx, fp64, dim):
    y, q = points(300, dim, 9), charges(300, 9)
    if dim == 1:
        y = y[:, 0]                           # a 1-D array is dim 1
    phi, grad = fmmcl.evaluate(y, q, kernel="gaussian", method="direct", sigma=0.3,
                               gradient=True, device=ctx)
    ref_phi, ref_grad = direct("gaussian", y.reshape(300, dim), q, sigma=0.3)
    assert grad.shape == (300, dim)
    assert rel(phi, ref_phi) < 1e-12 and rel(grad, ref_grad) < 1e-12


def test_gaussian_gradient_off_by_default(ctx, fp64):
    y, q = points(100, 2, 10), charges(100, 10)
    phi, grad = fmmcl.evaluate(y, q, kernel="gaussian", sigma=0.3, device=ctx)
    assert grad is None and phi.shape == (100,)


@pytest.mark.parametrize("dim", [2, 3])
def test_gaussian_fgt(ctx, fp64, dim):
    if dim != 2 and not FULL:
        pytest.skip("the dimension is compiled in: FMMCL_TEST_FULL=1 runs dim 3")
    y, q = points(1200, dim, 11), charges(1200, 11)
    x = points(300, dim, 12)
    tol = 1e-6
    with fmmcl.Plan(ctx, y, x, kernel="gaussian", method="fgt", sigma=0.2, tol=tol) as plan:
        phi, grad = plan.execute(q)
        bound = plan.error_bound()
    assert grad is None
    ref_phi, _ = direct("gaussian", y, q, x, sigma=0.2)
    # the FGT's promise: |error| <= bound * sum |q| at every target, bound <= tol
    err = np.max(np.abs(phi - ref_phi)) / np.sum(np.abs(q))
    assert 0 < bound <= tol
    assert err <= bound + 1e-13


def test_gaussian_cutoff(ctx, fp64):
    y, q = points(1200, 2, 13), charges(1200, 13)
    x = points(300, 2, 14)
    tol = 1e-6
    with fmmcl.Plan(ctx, y, x, kernel="gaussian", method="cutoff", sigma=0.02, tol=tol) as plan:
        phi, grad = plan.execute(q)
        bound = plan.error_bound()
        assert plan.info()["method"] == "cutoff"
    assert grad is None
    ref_phi, _ = direct("gaussian", y, q, x, sigma=0.02)
    # the cut-off's promise, the FGT's: |error| <= bound * sum |q| at every target
    err = np.max(np.abs(phi - ref_phi)) / np.sum(np.abs(q))
    assert 0 < bound <= tol
    assert err <= bound + 1e-13


BBFMM_CASES = [
    ("laplace3d", {}, {}),
    ("gaussian", {"sigma": 0.5}, {"sigma": 0.5}),
    ("inv_r2", {}, {}),
    ("multiquadric", {"kernel_param": 0.5}, {"c": 0.5}),
    ("inverse_multiquadric", {"kernel_param": 0.5}, {"c": 0.5}),
    ("yukawa", {"kernel_param": 2.0}, {"c": 2.0}),
    ("expr", {"expr": "exp(-2*r) / r"}, {"f": lambda r: np.exp(-2 * r) / r}),
]


# Each bbFMM function compiles its own programs (tens of seconds on PoCL), so
# make check builds each once: the plan kernel and a user expression through
# the bbFMM, the built-in functions through the direct sum. FMMCL_TEST_FULL=1
# runs every function both ways.
FULL = os.environ.get("FMMCL_TEST_FULL") == "1"
BBFMM_QUICK = ("laplace3d", "expr")
DIRECT_QUICK = ("inv_r2", "multiquadric", "inverse_multiquadric", "yukawa")


def _bbfmm_case(name, opts, ref_opts):
    kernel = "laplace3d" if name == "expr" else name
    return kernel, dict(opts), dict(ref_opts)


@pytest.mark.parametrize("name,opts,ref_opts", BBFMM_CASES, ids=[c[0] for c in BBFMM_CASES])
def test_bbfmm(ctx, fp64, name, opts, ref_opts):
    if not FULL and name not in BBFMM_QUICK:
        pytest.skip("each bbFMM function builds its own programs: FMMCL_TEST_FULL=1 runs it")
    kernel, opts, ref_opts = _bbfmm_case(name, opts, ref_opts)
    y, q = points(1500, 3, 13), charges(1500, 13)
    x = points(200, 3, 14)
    phi, grad = fmmcl.evaluate(y, q, x, kernel=kernel, method="bbfmm", tol=1e-4, device=ctx,
                               **opts)
    assert grad is None                       # the bbFMM gives the potential only
    ref_phi, _ = direct(name if name != "laplace3d" else "laplace3d", y, q, x, **ref_opts)
    assert rel(phi, ref_phi) <= 1e-3


# The bbFMM's functions summed directly, every one.
DIRECT_CASES = BBFMM_CASES[2:]


@pytest.mark.parametrize("name,opts,ref_opts", DIRECT_CASES, ids=[c[0] for c in DIRECT_CASES])
def test_bbfmm_kernels_direct(ctx, fp64, name, opts, ref_opts):
    if not FULL and name not in DIRECT_QUICK:
        pytest.skip("each bbFMM function builds its own programs: FMMCL_TEST_FULL=1 runs it")
    kernel, opts, ref_opts = _bbfmm_case(name, opts, ref_opts)
    y, q = points(300, 3, 15), charges(300, 15)
    phi, grad = fmmcl.evaluate(y, q, kernel=kernel, method="direct", device=ctx, **opts)
    ref_phi, _ = direct(name, y, q, **ref_opts)
    assert grad is None and rel(phi, ref_phi) < 1e-12


def test_reference_matches_numpy():
    y, q = points(200, 3, 16), charges(200, 16)
    phi, grad = fmmcl.reference(y, q)
    ref_phi, ref_grad = direct("laplace3d", y, q)
    assert rel(phi, ref_phi) < 1e-13 and rel(grad, ref_grad) < 1e-13


def test_hybrid_plan(fp64):
    y, q = points(3000, 3, 17), charges(3000, 17)
    with fmmcl.Context() as a, fmmcl.Context() as b:
        with fmmcl.Plan.hybrid(a, b, y, schedule="hybrid1", tol=1e-6) as plan:
            phi, grad = plan.execute(q)
            assert plan.schedule == "hybrid1"
            assert any(k.startswith("b:") for k in plan.timings())
    ref_phi, ref_grad = direct("laplace3d", y, q)
    assert rel(phi, ref_phi) <= 1e-6 and rel(grad, ref_grad) <= 1e-5
