"""Engine errors; ``code`` is the gRPC status the server answers with."""

from __future__ import annotations

from .. import CuzkError


class EngineError(CuzkError):
    code = "INTERNAL"


class NotFound(EngineError):
    code = "NOT_FOUND"


class InvalidArgument(EngineError):
    code = "INVALID_ARGUMENT"


class ResourceExhausted(EngineError):
    code = "RESOURCE_EXHAUSTED"


class Unavailable(EngineError):
    code = "UNAVAILABLE"


class AlreadyExists(EngineError):
    code = "ALREADY_EXISTS"


class FailedPrecondition(EngineError):
    code = "FAILED_PRECONDITION"
