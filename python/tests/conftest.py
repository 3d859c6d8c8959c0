# conftest.py — shared fixtures of the fmmcl pytest suite: the device context and NumPy direct sums.
import numpy as np
import pytest

import fmmcl


@pytest.fixture(scope="session")
def ctx():
    """The default device (FMMCL_DEVICE, else the first GPU, else the CPU)."""
    with fmmcl.Context() as c:
        yield c


@pytest.fixture(scope="session")
def fp64(ctx):
    if not ctx.device.has_fp64:
        pytest.skip(f"{ctx.device.name} has no double precision")
    return True


def points(n, dim, seed):
    return np.random.default_rng(seed).random((n, dim))


def charges(n, seed):
    return np.random.default_rng(seed + 1000).random(n) - 0.5


def _pairs(x, y):
    d = x[:, None, :] - y[None, :, :]        # target - source, (M, N, dim)
    return d, np.sqrt(np.sum(d * d, axis=2))


def direct(kernel, y, q, x=None, sigma=1.0, softening=0.0, c=0.0, f=None):
    """NumPy's O(NM) sum of kernel at targets x (default: the sources y):
    (potential, gradient or None), with the library's conventions on r = 0."""
    x = y if x is None else x
    d, r = _pairs(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kernel == "laplace3d":
            s2 = r * r + softening * softening
            k = np.where(s2 > 0, 1 / np.sqrt(s2), 0.0)
            g = -d * np.where(s2 > 0, k / s2, 0.0)[..., None]
        elif kernel == "laplace2d":
            k = np.where(r > 0, -np.log(r), 0.0)
            g = -d * np.where(r > 0, 1 / (r * r), 0.0)[..., None]
        elif kernel == "gaussian":
            k = np.exp(-r * r / (2 * sigma * sigma))
            g = -d * (k / (sigma * sigma))[..., None]
        elif kernel == "inv_r2":
            k, g = np.where(r > 0, 1 / (r * r), 0.0), None
        elif kernel == "multiquadric":
            k, g = np.sqrt(r * r + c * c), None
        elif kernel == "inverse_multiquadric":
            k, g = 1 / np.sqrt(r * r + c * c), None
        elif kernel == "yukawa":
            k, g = np.where(r > 0, np.exp(-c * r) / r, 0.0), None
        elif kernel == "expr":
            k = f(r)
            k, g = np.where(np.isfinite(k), k, 0.0), None
        else:
            raise ValueError(kernel)
    pot = k @ q
    grad = None if g is None else np.einsum("mnd,n->md", g, q)
    return pot, grad


def rel(a, b):
    return fmmcl.relative_error(a, b)
