# test_arrays.py — array-likes, dtypes, memory order and output shapes of the Python layer.
import ctypes
import threading

import numpy as np
import pytest

import fmmcl
from fmmcl import _core, _lib
from conftest import charges, direct, points, rel


def test_devices_and_context(ctx):
    devs = fmmcl.devices()
    assert devs and all(isinstance(d, fmmcl.Device) for d in devs)
    assert ctx.device.name in [d.name for d in devs]
    with fmmcl.Context(devs[0]) as c:                    # a Device selects itself
        assert c.device.name == devs[0].name and devs[0].selector in repr(c)


def test_no_copy_of_float64_c_arrays():
    x = points(10, 3, 1)
    arr, n, dim = _core._points(x, "sources", 3)
    assert arr is x and (n, dim) == (10, 3)
    q = charges(10, 1)
    assert _core._charges(q, 10) is q


@pytest.mark.parametrize("convert", [
    lambda a: a.astype(np.float32), lambda a: np.asfortranarray(a), lambda a: a.tolist(),
    lambda a: np.asfortranarray(a.astype(np.float32)), lambda a: a[::-1][::-1].copy(order="F"),
])
def test_array_likes_give_the_same_sum(ctx, fp64, convert):
    # multiples of 2^-10 are exact in float32, so every form is the same input
    x = np.round(points(200, 3, 2) * 1024) / 1024
    q = np.round(charges(200, 2) * 1024) / 1024
    want = fmmcl.evaluate(x, q, method="direct", device=ctx)
    got = fmmcl.evaluate(convert(x), convert(q), method="direct", device=ctx)
    assert got.potential.dtype == np.float64 and got.potential.flags.c_contiguous
    assert got.gradient.shape == (200, 3) and got.gradient.flags.c_contiguous
    np.testing.assert_array_equal(got.potential, want.potential)
    np.testing.assert_array_equal(got.gradient, want.gradient)


def test_float32_input_single_precision(ctx):
    x = points(300, 3, 3).astype(np.float32)
    q = charges(300, 3).astype(np.float32)
    phi, grad = fmmcl.evaluate(x, q, method="direct", precision="single", device=ctx)
    ref_phi, ref_grad = direct("laplace3d", x.astype(np.float64), q.astype(np.float64))
    assert rel(phi, ref_phi) < 2e-5 and rel(grad, ref_grad) < 2e-5


def test_integer_input_is_converted(ctx, fp64):
    x = np.arange(30).reshape(10, 3)
    phi, _ = fmmcl.evaluate(x, np.ones(10, dtype=int), method="direct", device=ctx)
    assert rel(phi, direct("laplace3d", x.astype(float), np.ones(10))[0]) < 1e-14


def test_column_of_charges(ctx, fp64):
    x, q = points(20, 3, 4), charges(20, 4)
    a = fmmcl.evaluate(x, q[:, None], method="direct", device=ctx)
    b = fmmcl.evaluate(x, q, method="direct", device=ctx)
    np.testing.assert_array_equal(a.potential, b.potential)


def test_separate_targets_shapes(ctx, fp64):
    x, q, t = points(50, 2, 5), charges(50, 5), points(7, 2, 6)
    phi, grad = fmmcl.evaluate(x, q, t, kernel="laplace2d", method="direct", device=ctx)
    assert phi.shape == (7,) and grad.shape == (7, 2)


def test_gil_released_during_execution(ctx, fp64):
    # ctypes.CDLL (not PyDLL) drops the GIL around each call: two threads
    # executing plans at once both finish, with their own results.
    assert isinstance(_lib.lib(), ctypes.CDLL) and not isinstance(_lib.lib(), ctypes.PyDLL)
    x = points(1500, 3, 7)
    qs = [charges(1500, 8), charges(1500, 9)]
    out = [None, None]
    with fmmcl.Plan(ctx, x, method="direct") as plan:
        want = [plan.execute(q).potential for q in qs]

        def work(i):
            with fmmcl.Plan(ctx, x, method="direct") as p:
                out[i] = p.execute(qs[i]).potential
        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i in range(2):
        np.testing.assert_allclose(out[i], want[i], rtol=1e-14)
