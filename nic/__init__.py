"""nic: the network interface and the collectives it runs (imports ``noc`` only)."""
