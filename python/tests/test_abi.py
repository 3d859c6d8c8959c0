# test_abi.py — the ctypes structs and name tables against lib/fmmcl.h, when the source tree is here.
import os
import re

import pytest

from fmmcl import _lib, _names

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "fmmcl.h")


@pytest.fixture(scope="module")
def header():
    if not os.path.exists(HEADER):
        pytest.skip("lib/fmmcl.h is not beside this package (an installed copy)")
    with open(HEADER) as f:
        text = f.read()
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _struct_fields(header, name):
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), header, re.S).group(1)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            for part in decl.split(","):
                fields.append(re.search(r"(\w+)\s*(\[\w*\])?\s*$", part.strip()).group(1))
    return fields


def _enum(header, name):
    body = re.search(r"typedef enum %s \{(.*?)\} %s;" % (name, name), header, re.S).group(1)
    return [re.match(r"\s*(\w+)", e).group(1) for e in body.split(",") if e.strip()]


@pytest.mark.parametrize("cname,pytype", [("fmmcl_plan_options", _lib.PlanOptions),
                                           ("fmmcl_device_info", _lib.DeviceInfo),
                                           ("fmmcl_phase_time", _lib.PhaseTime),
                                           ("fmmcl_plan_info", _lib.PlanInfo),
                                           ("fmmcl_sources_data", _lib.SourcesData),
                                           ("fmmcl_targets_data", _lib.TargetsData)])
def test_struct_fields_match(header, cname, pytype):
    assert [f[0] for f in pytype._fields_] == _struct_fields(header, cname)


def test_enums_match(header):
    assert ["FMMCL_" + s for s in _names.STATUS] == _enum(header, "fmmcl_status")[:-1]
    assert ["FMMCL_" + m.upper() for m in _names.METHODS] == _enum(header, "fmmcl_method")
    assert ["FMMCL_SCHEDULE_" + s.upper() for s in _names.SCHEDULES] == \
        _enum(header, "fmmcl_schedule")
    assert ["FMMCL_VENDOR_" + v.upper() for v in _names.VENDORS] == _enum(header, "fmmcl_vendor")
    kernels = _enum(header, "fmmcl_kernel")
    assert kernels == ["FMMCL_LAPLACE_3D", "FMMCL_GAUSSIAN", "FMMCL_LAPLACE_2D", "FMMCL_YUKAWA_3D",
                       "FMMCL_HELMHOLTZ_3D", "FMMCL_STOKES_3D"]
    for i, k in enumerate(kernels):
        assert getattr(_names, k[len("FMMCL_"):]) == i
    assert len(_enum(header, "fmmcl_bbfmm_kernel")) == 8


def test_bound_functions_are_public(header):
    for name in _lib._PROTOTYPES:
        assert re.search(r"\b%s\s*\(" % name, header), f"{name} is not declared in fmmcl.h"
