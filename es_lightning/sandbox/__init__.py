"""The code sandbox: untrusted (model-written) Python run against test statements in a child
process, with a verdict the code cannot forge (:mod:`~es_lightning.sandbox.sandbox`).

The parent side is :class:`Sandbox` (:mod:`~es_lightning.sandbox.sandbox`), which plans the probes
(:mod:`~es_lightning.sandbox.plan`), starts and contains each child
(:mod:`~es_lightning.sandbox.isolation`) and decodes what it reports
(:mod:`~es_lightning.sandbox.protocol`); the child side is a standard-library script,
:mod:`~es_lightning.sandbox.child`. The MBPP task (:mod:`es_lightning.tasks.mbpp`) scores code here.
"""

from es_lightning.sandbox.sandbox import Isolation, Sandbox, SandboxResult, SandboxUnavailableError

__all__ = ["Isolation", "Sandbox", "SandboxResult", "SandboxUnavailableError"]
