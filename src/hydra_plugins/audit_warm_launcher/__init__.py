"""The warm launcher (``hydra/launcher=warm``), in the namespace Hydra loads launchers from."""
