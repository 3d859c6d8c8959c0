# test_plan.py — plans: reuse with new charges, timings, counts, error bounds, build options.
import numpy as np
import pytest

import fmmcl
from conftest import charges, direct, points, rel


def test_plan_executed_with_new_charges(ctx, fp64):
    y, x = points(2000, 3, 1), points(300, 3, 2)
    q1, q2 = charges(2000, 1), charges(2000, 2)
    with fmmcl.Plan(ctx, y, x, method="fmm", tol=1e-6) as plan:
        r1 = plan.execute(q1)
        r2 = plan.execute(q2)
        r12 = plan(q1 + q2)                      # a plan is callable too
        counts = plan.counts()
        timings = plan.timings()
    for r, q in ((r1, q1), (r2, q2)):
        assert rel(r.potential, direct("laplace3d", y, q, x)[0]) <= 1e-6
    # the sum is linear in the charges: the same tree and operators serve each
    np.testing.assert_allclose(r12.potential, r1.potential + r2.potential,
                               atol=1e-12 * np.abs(r12.potential).max())
    assert counts["m2l"] > 0 and counts["p2p"] > 0
    assert "build" in timings and "p2p" in timings
    assert all(v >= 0 for v in timings.values())


def test_direct_plan_counts_and_options(ctx, fp64):
    y = points(100, 3, 3)
    with fmmcl.Plan(ctx, y, points(30, 3, 4), method="direct") as plan:
        plan.execute(charges(100, 3))
        assert plan.counts()["p2p"] == 100 * 30
        assert plan.error_bound() == 0
        assert "-DFMMCL_DOUBLE=1" in plan.build_options()
        assert (plan.n_sources, plan.n_targets, plan.dim) == (100, 30, 3)
        assert plan.method == "direct" and plan.precision == "double" and plan.gradient
        assert plan.schedule is None
        assert "direct" in repr(plan)


def test_fgt_error_bound_follows_tol(ctx, fp64):
    y = points(500, 2, 5)
    bounds = []
    for tol in (1e-3, 1e-6):
        with fmmcl.Plan(ctx, y, kernel="gaussian", method="fgt", sigma=0.2, tol=tol) as plan:
            bounds.append(plan.error_bound())
            assert 0 < bounds[-1] <= tol
    assert bounds[1] < bounds[0]


def test_info_says_what_auto_chose(ctx, fp64):
    y = points(3000, 3, 5)
    with fmmcl.Plan(ctx, y, method="auto", precision="single") as plan:
        info = plan.info()
    assert info["method"] in ("direct", "treecode", "fmm") and info["precision"] == "single"
    orders = []
    for tol in (1e-3, 1e-7):
        with fmmcl.Plan(ctx, y, method="fmm", tol=tol) as plan:
            orders.append(plan.info()["order"])
            assert plan.info()["leaf_size"] > 0
    assert 0 < orders[0] < orders[1]
    with fmmcl.Plan(ctx, y, method="fmm", leaf_size=64) as plan:
        assert plan.info()["leaf_size"] == 64
    with fmmcl.Plan(ctx, y, method="direct") as plan:
        assert plan.info()["leaf_size"] == 0


def test_rounding_estimate_sees_a_close_pair(ctx, fp64):
    y = points(2000, 3, 6)
    y[17] = y[900] + np.array([0.0, 1e-6, 0.0])
    # the direct sum in single leaves a lone close pair's offsets plain
    # (it adds their low parts when 2 % of the points are that close)
    with fmmcl.Plan(ctx, y, method="direct", precision="single") as plan:
        e_plain, d = plan.rounding_estimate()
    # the FMM adds them for one such pair: resolved in single, more so in double
    with fmmcl.Plan(ctx, y, method="fmm", precision="single") as plan:
        e_single, d_fmm = plan.rounding_estimate()
    with fmmcl.Plan(ctx, y, method="fmm", tol=1e-8) as plan:
        e_double, _ = plan.rounding_estimate()
    assert abs(d - 1e-6) < 1e-9 and abs(d_fmm - 1e-6) < 1e-9
    assert e_plain > 1e-4 > e_single > 1e-8 > e_double


def test_update_positions_is_a_time_step(ctx, fp64):
    y, q = points(1500, 3, 7), charges(1500, 7)
    with fmmcl.Plan(ctx, y, method="fmm", tol=1e-6) as plan:
        plan.execute(q)
        z = y + 0.05 * points(1500, 3, 8)        # every point moves
        plan.update_positions(z)
        r = plan.execute(q)
        assert "update" in plan.timings()
        with pytest.raises(fmmcl.InvalidArgumentError):
            plan.update_positions(z[:10])        # the counts stay the plan's
        bad = z.copy()
        bad[3, 1] = np.nan
        with pytest.raises(fmmcl.Error):
            plan.update_positions(bad)
        # a refused update leaves the plan on z
        np.testing.assert_array_equal(plan.execute(q).potential, r.potential)
    assert rel(r.potential, direct("laplace3d", z, q)[0]) <= 1e-6
