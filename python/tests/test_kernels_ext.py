# test_kernels_ext.py — Plan.evaluate's kernels (Laplace dipoles and Hessians, Helmholtz, Stokes) against NumPy.
import numpy as np
import pytest

import fmmcl
from conftest import _pairs, points, rel

# Relative L2 rounding of a direct sum of a few hundred points; single sees its
# coordinates rounded too, a few 1e-7 of the field scaled by extent / distance.
ROUND = {"double": 1e-12, "single": 1e-4}


def laplace_np(y, x, q, d):
    r, _ = _pairs(x, y)                      # target - source (M, N, 3)
    r2 = np.sum(r * r, axis=2)
    with np.errstate(divide="ignore"):
        ri = np.where(r2 > 0, 1 / np.sqrt(r2), 0.0)
    ri3, ri5, ri7 = ri ** 3, ri ** 5, ri ** 7
    rd = np.einsum("mnk,nk->mn", r, d)
    pot = ri @ q + np.sum(rd * ri3, axis=1)
    grad = -np.einsum("mnk,mn,n->mk", r, ri3, q) + ri3 @ d - 3 * np.einsum("mnk,mn->mk", r, rd * ri5)
    hess = np.zeros((len(x), 3, 3))
    eye = np.eye(3)
    hess += np.einsum("mna,mnb,mn,n->mab", r, r, 3 * ri5, q) - np.einsum("mn,n,ab->mab", ri3, q, eye)
    hess += -3 * (np.einsum("na,mnb,mn->mab", d, r, ri5) + np.einsum("nb,mna,mn->mab", d, r, ri5)
                  + np.einsum("mn,ab->mab", rd * ri5, eye)) + 15 * np.einsum("mna,mnb,mn->mab", r, r, rd * ri7)
    idx = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    return pot, grad, np.stack([hess[:, a, b] for a, b in idx], axis=1)


def helmholtz_np(y, x, q, k):
    r, rr = _pairs(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(rr > 0, np.exp(1j * k * rr) / rr, 0)
        a = np.where(rr > 0, np.exp(1j * k * rr) * (1j * k * rr - 1) / rr ** 3, 0)
    return g @ q, np.einsum("mnk,mn,n->mk", r, a, q)


def stokes_np(y, x, f):
    r, rr = _pairs(x, y)
    with np.errstate(divide="ignore"):
        ri = np.where(rr > 0, 1 / rr, 0.0)
    rf = np.einsum("mnk,nk->mn", r, f)
    u = ri @ f + np.einsum("mnk,mn->mk", r, rf * ri ** 3)
    return u, np.sum(2 * rf * ri ** 3, axis=1)


@pytest.mark.parametrize("precision", ["single", "double"])
def test_laplace_dipoles_hessian(ctx, precision):
    if precision == "double" and not ctx.device.has_fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(5)
    y, x = points(300, 3, 1), points(200, 3, 2)
    q, d = rng.random(300) - 0.5, rng.random((300, 3)) - 0.5
    with fmmcl.Plan(ctx, y, x, method="direct", precision=precision, dipoles=True,
                    hessian=True) as plan:
        f = plan.evaluate(charges=q, dipoles=d)
    pot, grad, hess = laplace_np(y, x, q, d)
    assert f.hessian.shape == (200, 6) and f.velocity is None
    assert rel(f.potential, pot) < ROUND[precision]
    assert rel(f.gradient, grad) < ROUND[precision]
    assert rel(f.hessian, hess) < ROUND[precision]
    ref = fmmcl.reference_fields(y, x, charges=q, dipoles=d, hessian=True)
    assert rel(ref.hessian, hess) < 1e-12 and rel(ref.potential, pot) < 1e-12


@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("k", [3.0, 2 + 0.5j, 4j])
def test_helmholtz(ctx, precision, k):
    if precision == "double" and not ctx.device.has_fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(6)
    y = points(300, 3, 3)
    q = rng.random(300) - 0.5 + 1j * (rng.random(300) - 0.5)
    f = fmmcl.fields(y, kernel="helmholtz3d", charges=q, wavenumber=k, precision=precision,
                     device=ctx)
    pot, grad = helmholtz_np(y, y, q, k)
    assert f.potential.dtype == np.complex128 and f.gradient.shape == (300, 3)
    assert rel(f.potential, pot) < ROUND[precision]
    assert rel(f.gradient, grad) < ROUND[precision]


def test_helmholtz_imaginary_k_is_yukawa(ctx, fp64):
    y, q = points(200, 3, 4), np.random.default_rng(7).random(200) - 0.5
    f = fmmcl.fields(y, kernel="helmholtz3d", charges=q, wavenumber=2.5j, precision="double",
                     device=ctx)
    yuk = fmmcl.evaluate(y, q, kernel="yukawa3d", kernel_param=2.5, method="direct", device=ctx)
    assert np.all(f.potential.imag == 0)
    assert rel(f.potential.real, yuk.potential) < 1e-12
    assert rel(f.gradient.real, yuk.gradient) < 1e-12


@pytest.mark.parametrize("precision", ["single", "double"])
def test_stokes(ctx, precision):
    if precision == "double" and not ctx.device.has_fp64:
        pytest.skip("no fp64")
    y = points(300, 3, 8)
    f = np.random.default_rng(9).random((300, 3)) - 0.5
    out = fmmcl.fields(y, kernel="stokes3d", forces=f, pressure=True, precision=precision,
                       device=ctx)
    u, p = stokes_np(y, y, f)
    assert out.potential is None and out.velocity.shape == (300, 3)
    assert rel(out.velocity, u) < ROUND[precision]
    assert rel(out.pressure, p) < ROUND[precision]


def test_stresslets_match_reference(ctx, fp64):
    y = points(200, 3, 10)
    rng = np.random.default_rng(11)
    s, n = rng.random((200, 3)) - 0.5, rng.random((200, 3)) - 0.5
    got = fmmcl.fields(y, kernel="stokes3d", stresslet_strengths=s, stresslet_orientations=n,
                       pressure=True, precision="double", device=ctx)
    ref = fmmcl.reference_fields(y, kernel="stokes3d", stresslet_strengths=s,
                                 stresslet_orientations=n, pressure=True)
    assert rel(got.velocity, ref.velocity) < 1e-12 and rel(got.pressure, ref.pressure) < 1e-12


def test_bad_input(ctx):
    y = points(10, 3, 12)
    q = np.ones(10, np.complex128)
    with pytest.raises(fmmcl.InvalidArgumentError, match="imaginary part"):
        fmmcl.fields(y, kernel="helmholtz3d", charges=q, wavenumber=1 - 1j, device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="Hessian"):
        fmmcl.fields(y, kernel="helmholtz3d", charges=q, hessian=True, device=ctx)
    with pytest.raises(fmmcl.UnsupportedError):            # the bbFMM has no dipoles
        fmmcl.fields(y, charges=np.ones(10), dipoles=np.ones((10, 3)), method="bbfmm", device=ctx)
    with pytest.raises(fmmcl.NullPointerError):
        fmmcl.fields(y, kernel="stokes3d", device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="real"):
        fmmcl.fields(y, charges=q, device=ctx)
    with fmmcl.Plan(ctx, y, kernel="helmholtz3d", wavenumber=1.0, method="direct") as plan:
        with pytest.raises(fmmcl.InvalidArgumentError, match="fmmcl_plan_evaluate"):
            plan.execute(np.ones(10))


def test_stokes_fmm(ctx, fp64):
    """Stokeslets by four Laplace FMMs (double, tol 1e-6) against the reference."""
    y = points(2000, 3, 13) + 5.0
    f = np.random.default_rng(14).random((2000, 3)) - 0.5
    with fmmcl.Plan(ctx, y, kernel="stokes3d", method="fmm", precision="double", tol=1e-6,
                    pressure=True) as plan:
        got = plan.evaluate(forces=f)
        assert plan.info()["order"] > 0
    ref = fmmcl.reference_fields(y, kernel="stokes3d", forces=f, pressure=True)
    scale = np.max(np.linalg.norm(ref.velocity, axis=1))
    assert np.max(np.linalg.norm(got.velocity - ref.velocity, axis=1)) <= 1e-6 * scale
    assert np.max(np.abs(got.pressure - ref.pressure)) <= 1e-6 * np.max(np.abs(ref.pressure))


@pytest.mark.parametrize("method", ["fmm", "treecode"])
def test_laplace_dipoles_fast(ctx, fp64, method):
    """Dipoles and Hessians through the 3D FMM and treecode (double, tol 1e-7), separate
    targets, against the reference: the potential within tol, derivatives within 10 tol."""
    rng = np.random.default_rng(21)
    y, x = points(2000, 3, 22), points(1000, 3, 23)
    q, d = rng.random(2000) - 0.5, rng.random((2000, 3)) - 0.5
    with fmmcl.Plan(ctx, y, x, method=method, precision="double", tol=1e-7, leaf_size=64,
                    dipoles=True, hessian=True) as plan:
        got = plan.evaluate(charges=q, dipoles=d)
        assert plan.info()["order"] > 0
    ref = fmmcl.reference_fields(y, x, charges=q, dipoles=d, hessian=True)
    assert rel(got.potential, ref.potential) <= 1e-7
    assert rel(got.gradient, ref.gradient) <= 1e-6
    assert rel(got.hessian, ref.hessian) <= 1e-6


def test_stresslet_fmm(ctx, fp64):
    """Stresslets (with forces) by four Laplace FMMs with dipoles against the reference."""
    rng = np.random.default_rng(24)
    y = points(1500, 3, 25) + 5.0
    f, s, n = (rng.random((1500, 3)) - 0.5 for _ in range(3))
    with fmmcl.Plan(ctx, y, kernel="stokes3d", method="fmm", precision="double", tol=1e-6,
                    leaf_size=64, stresslets=True, pressure=True) as plan:
        got = plan.evaluate(forces=f, stresslet_strengths=s, stresslet_orientations=n)
    ref = fmmcl.reference_fields(y, kernel="stokes3d", forces=f, stresslet_strengths=s,
                                 stresslet_orientations=n, pressure=True)
    scale = np.max(np.linalg.norm(ref.velocity, axis=1))
    assert np.max(np.linalg.norm(got.velocity - ref.velocity, axis=1)) <= 1e-6 * scale
    assert np.max(np.abs(got.pressure - ref.pressure)) <= 1e-6 * np.max(np.abs(ref.pressure))


def test_helmholtz_fmm(ctx, fp64):
    # the FMM (spherical-wave expansions) against the plain-C reference over all targets
    y, x = points(2000, 3, 13), points(400, 3, 14)
    rng = np.random.default_rng(15)
    q = rng.random(2000) - 0.5 + 1j * (rng.random(2000) - 0.5)
    k = 4 + 1j
    f = fmmcl.fields(y, x, kernel="helmholtz3d", charges=q, wavenumber=k, method="fmm", tol=1e-6,
                     precision="double", gradient=True, device=ctx)
    ref = fmmcl.reference_fields(y, x, kernel="helmholtz3d", charges=q, wavenumber=k, gradient=True)
    assert rel(f.potential, ref.potential) < 1e-6
    assert rel(f.gradient, ref.gradient) < 1e-6


@pytest.mark.parametrize("scale", [1e-12, 1e13])
def test_hessian_at_extreme_extents(ctx, scale):
    # r^-5 overflows float below r = 2e-8 and underflows above 5e7 in world
    # units; the device sums in units of the set's size, so both are right
    rng = np.random.default_rng(8)
    y = points(150, 3, 4) * scale
    q, d = rng.random(150) - 0.5, (rng.random((150, 3)) - 0.5) * scale
    f = fmmcl.fields(y, charges=q, dipoles=d, hessian=True, method="direct", precision="single",
                     device=ctx)
    ref = fmmcl.reference_fields(y, charges=q, dipoles=d, hessian=True)
    for got, want in ((f.potential, ref.potential), (f.gradient, ref.gradient),
                      (f.hessian, ref.hessian)):
        assert np.all(np.isfinite(got)) and rel(got, want) < 3e-5


def test_helmholtz_phase_lost_is_refused(ctx):
    # k r = 1.7e7 in float: the phase rounds by a radian, nothing is left
    y = points(100, 3, 5)
    q = np.ones(100, dtype=complex)
    with pytest.raises(fmmcl.InvalidArgumentError, match="phase"):
        fmmcl.fields(y, kernel="helmholtz3d", charges=q, wavenumber=1e7, precision="single",
                     device=ctx)
    with fmmcl.Plan(ctx, y, kernel="helmholtz3d", wavenumber=1e5, precision="single",
                    method="direct") as plan:
        estimate, _ = plan.rounding_estimate()   # u k r / 3 at the farthest pair
    assert estimate > 1e-3
