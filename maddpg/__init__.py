"""maddpg: HLS-style MADDPG kernels, MPE environments, trainer and accelerator model (imports ``noc`` only)."""
