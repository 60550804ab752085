"""The code sandbox: untrusted (model-written) Python run against test statements in a child
process, with a verdict the code cannot forge (:mod:`~es_lightning.sandbox.sandbox`).
"""

from es_lightning.sandbox.sandbox import Isolation, Sandbox, SandboxResult, SandboxUnavailableError

__all__ = ["Isolation", "Sandbox", "SandboxResult", "SandboxUnavailableError"]
