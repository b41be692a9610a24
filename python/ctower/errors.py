"""TensorFlow's error classes (tf.errors), raised with ctower's message.

ctower's status codes (ctower/status.h) map onto TensorFlow's: a failed run
raises the class of its code, with the engine's one-sentence message.
"""
from ctower import _ctower

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failed operation: TensorFlow's base class of run-time errors."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message


def _subclass(name, code):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)
    return type(name, (OpError,), {"__init__": __init__, "__module__": __name__})


CancelledError = _subclass("CancelledError", CANCELLED)
UnknownError = _subclass("UnknownError", UNKNOWN)
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _subclass("NotFoundError", NOT_FOUND)
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED)
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED)
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _subclass("AbortedError", ABORTED)
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED)
InternalError = _subclass("InternalError", INTERNAL)
UnavailableError = _subclass("UnavailableError", UNAVAILABLE)
DataLossError = _subclass("DataLossError", DATA_LOSS)

# ct_code (include/ctower/status.h) -> class
_BY_CT_CODE = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: AlreadyExistsError,
    4: ResourceExhaustedError,
    5: FailedPreconditionError,
    6: OutOfRangeError,
    7: DataLossError,
    8: UnavailableError,
    9: UnimplementedError,
    10: InternalError,
    11: CancelledError,
}
_ctower._set_error_classes(_BY_CT_CODE)
