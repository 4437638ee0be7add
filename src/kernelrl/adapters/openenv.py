"""OpenEnv: kernelrl's environment client (`KernelEnvClient`, `KernelAction`) for trainers that drive OpenEnv
environments; the server side is `kernelrl serve --openenv` (kernelrl.serve.openenv_env). Needs the openenv
package (`pip install 'kernelrl[openenv]'`), which this module imports."""

from kernelrl.serve.openenv_env import KernelAction, KernelEnvClient, KernelObservation, KernelState

__all__ = ["KernelAction", "KernelEnvClient", "KernelObservation", "KernelState"]
