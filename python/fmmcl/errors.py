# errors.py — fmmcl.Error and one subclass per fmmcl_status, carrying the library's message.
"""Exceptions: every failure of the library, and every argument the Python
layer refuses before calling it, raises a subclass of :class:`Error`."""


class Error(Exception):
    """A libfmmcl failure.

    ``status`` is the fmmcl_status value, ``status_name`` its enum name
    without the prefix ("ERROR_BUILD_FAILED"), ``reason`` the library's
    one-line description of the status (fmmcl_strerror) and ``message`` the
    detail (fmmcl_last_error: the failing call, a build log, the devices
    present).
    """

    status = None
    status_name = "ERROR"

    def __init__(self, message, reason=None, status=None):
        if status is not None:
            self.status = status
        self.message = message
        self.reason = reason
        super().__init__(f"{reason}: {message}" if reason and message else (message or reason or ""))


class NullPointerError(Error):
    status, status_name = 1, "ERROR_NULL_POINTER"


class InvalidArgumentError(Error, ValueError):
    """An option out of range, an unknown name, an array of the wrong shape or dtype."""
    status, status_name = 2, "ERROR_INVALID_ARGUMENT"


class EmptyInputError(Error, ValueError):
    status, status_name = 3, "ERROR_EMPTY_INPUT"


class NonFiniteInputError(Error, ValueError):
    status, status_name = 4, "ERROR_NONFINITE_INPUT"


class UnsupportedError(Error):
    """Valid, but not available: a method for a kernel, fp64 on the device."""
    status, status_name = 5, "ERROR_UNSUPPORTED"


class OutOfMemoryError(Error, MemoryError):
    status, status_name = 6, "ERROR_OUT_OF_MEMORY"


class NoDeviceError(Error):
    status, status_name = 7, "ERROR_NO_DEVICE"


class DeviceNotFoundError(Error):
    """The device selector matched nothing; the message lists every device."""
    status, status_name = 8, "ERROR_DEVICE_NOT_FOUND"


class KernelNotFoundError(Error):
    status, status_name = 9, "ERROR_KERNEL_NOT_FOUND"


class BuildError(Error):
    """The OpenCL compiler rejected a kernel; ``log`` holds the compiler's output."""
    status, status_name = 10, "ERROR_BUILD_FAILED"

    @property
    def log(self):
        return self.message


class OpenCLError(Error):
    status, status_name = 11, "ERROR_OPENCL"


class FileError(Error):
    status, status_name = 12, "ERROR_IO"


class CorruptFileError(Error):
    status, status_name = 13, "ERROR_CORRUPT_FILE"


class InternalError(Error):
    status, status_name = 14, "ERROR_INTERNAL"


class NonFiniteOutputError(Error, ArithmeticError):
    """The result overflowed the plan's precision: use double precision or rescale."""
    status, status_name = 15, "ERROR_NONFINITE_OUTPUT"


class LibraryNotFoundError(Error, ImportError):
    """libfmmcl.so itself could not be loaded (no library status: it never ran)."""
    status_name = "LIBRARY_NOT_FOUND"


_BY_STATUS = {cls.status: cls for cls in (
    NullPointerError, InvalidArgumentError, EmptyInputError, NonFiniteInputError,
    UnsupportedError, OutOfMemoryError, NoDeviceError, DeviceNotFoundError,
    KernelNotFoundError, BuildError, OpenCLError, FileError, CorruptFileError, InternalError,
    NonFiniteOutputError)}


def from_status(status, reason, message):
    """The exception for a nonzero fmmcl_status (Error itself for one this table lacks)."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message, reason, status)
