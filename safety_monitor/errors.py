"""Errors users see. Each names the file, item or tool at fault and, where it helps, the fix."""


class SafetyMonitorError(Exception):
    """Base class: the CLI prints these as one clear line and exits non-zero, without a traceback."""


class SpecError(SafetyMonitorError):
    """A spec file or formula is invalid (message names file, property and position)."""


class ToolMissingError(SafetyMonitorError):
    """An external program (MONA) is missing or misbehaving; the message says what to install."""


class EnvironmentSetupError(SafetyMonitorError):
    """An environment variable asks for what this machine lacks or its reader does not know (MUJOCO_GL)."""


class GroundingError(SafetyMonitorError):
    """Robot state cannot be grounded: unknown joint or object, NaN, time going backwards."""


class SourceError(SafetyMonitorError):
    """An input (trace file, bag, topic) is unreadable, truncated or lacks what is needed."""


class ExecutorError(SafetyMonitorError):
    """Tasks cannot run where asked: a bad --jobs, Ray not installed, its cluster unreachable, a worker dead twice."""
