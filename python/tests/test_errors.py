# test_errors.py — every failure raises an fmmcl.Error subclass with the library's status and message.
import numpy as np
import pytest

import fmmcl
from conftest import charges, points


def test_error_carries_status_and_message(ctx):
    y = points(50, 3, 1)
    y[7, 1] = np.nan
    with pytest.raises(fmmcl.NonFiniteInputError) as e:
        fmmcl.evaluate(y, charges(50, 1), device=ctx)
    err = e.value
    assert isinstance(err, fmmcl.Error) and isinstance(err, ValueError)
    assert err.status == 4 and err.status_name == "ERROR_NONFINITE_INPUT"
    assert "NaN" in err.reason and "coordinate" in err.message


def test_nan_charge(ctx):
    y, q = points(50, 3, 2), charges(50, 2)
    q[3] = np.inf
    with fmmcl.Plan(ctx, y, method="direct") as plan:
        with pytest.raises(fmmcl.NonFiniteInputError, match="charge"):
            plan.execute(q)


@pytest.mark.parametrize("shape,kernel,expect", [
    ((50, 2), "laplace3d", r"sources must have shape \(N, 3\), got shape \(50, 2\)"),
    ((50, 3), "laplace2d", r"sources must have shape \(N, 2\)"),
    ((50, 3, 1), "gaussian", r"shape \(N, dim\)"),
    ((0, 3), "laplace3d", "no points"),
])
def test_bad_source_shapes(ctx, shape, kernel, expect):
    with pytest.raises(fmmcl.InvalidArgumentError, match=expect):
        fmmcl.evaluate(np.zeros(shape), np.zeros(shape[0]), kernel=kernel, device=ctx)


def test_bad_charges_and_targets(ctx):
    y = points(40, 3, 3)
    with pytest.raises(fmmcl.InvalidArgumentError, match=r"charges must have shape \(40,\)"):
        fmmcl.evaluate(y, np.ones(39), device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match=r"targets must have shape \(N, 3\)"):
        fmmcl.evaluate(y, np.ones(40), targets=np.zeros((5, 2)), device=ctx)


@pytest.mark.parametrize("bad", [np.ones((20, 3), dtype=complex), np.full((20, 3), "a"),
                                 np.ones((20, 3), dtype=object)])
def test_bad_dtypes(ctx, bad):
    with pytest.raises(fmmcl.InvalidArgumentError, match="real numbers"):
        fmmcl.evaluate(bad, np.ones(20), device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="charges must hold real numbers"):
        fmmcl.evaluate(points(20, 3, 4), bad[:, 0], device=ctx)


def test_device_not_found():
    with pytest.raises(fmmcl.DeviceNotFoundError) as e:
        fmmcl.Context("no-such-device-anywhere")
    assert e.value.status == 8
    # the message lists the devices there are
    assert fmmcl.devices()[0].name in e.value.message


def test_build_failure_carries_log(ctx):
    with pytest.raises(fmmcl.BuildError) as e:
        fmmcl.evaluate(points(50, 3, 5), charges(50, 5), expr="exp(-r) /", method="bbfmm",
                       device=ctx)
    assert e.value.status == 10 and e.value.log == e.value.message
    assert "error" in e.value.log.lower()


def test_unknown_names(ctx):
    y, q = points(20, 3, 6), charges(20, 6)
    with pytest.raises(fmmcl.InvalidArgumentError, match="unknown kernel 'bessel'.*laplace3d"):
        fmmcl.evaluate(y, q, kernel="bessel", device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="unknown method 'magic'.*fmm"):
        fmmcl.evaluate(y, q, method="magic", device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="unknown precision"):
        fmmcl.evaluate(y, q, precision="half", device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="order must be an integer"):
        fmmcl.evaluate(y, q, order=2.5, device=ctx)


def test_library_refusals(ctx):
    y, q = points(30, 3, 7), charges(30, 7)
    with pytest.raises(fmmcl.UnsupportedError):          # the FGT sums the Gaussian only
        fmmcl.evaluate(y, q, method="fgt", device=ctx)
    with pytest.raises(fmmcl.InvalidArgumentError, match="sigma"):
        fmmcl.evaluate(y, q, kernel="gaussian", sigma=-1, device=ctx)
    with pytest.raises(fmmcl.Error):                     # the bbFMM has no gradient
        fmmcl.evaluate(y, q, method="bbfmm", gradient=True, device=ctx)
    with fmmcl.Plan(ctx, y, method="direct", precision="single") as plan:
        assert plan.error_bound() == 0                   # direct: exact up to rounding
    # the options of test_laplace3d_fmm_single: its programs are cached
    with fmmcl.Plan(ctx, y, method="fmm", precision="single", tol=1e-4) as plan:
        with pytest.raises(fmmcl.UnsupportedError):
            plan.error_bound()


def test_closed_plan(ctx):
    plan = fmmcl.Plan(ctx, points(20, 3, 8), method="direct", precision="single")
    plan.close()
    with pytest.raises(fmmcl.InvalidArgumentError, match="closed"):
        plan.execute(charges(20, 8))
