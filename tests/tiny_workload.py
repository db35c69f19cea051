"""A three-layer network as a workload file's text, for tests that need a workload that runs in
milliseconds (write it to a ``.toml`` file)."""

NET = """name = "tiny"
input = [3, 8, 8]
[[layers]]
kind = "conv"
out_channels = 8
kernel = 3
padding = 1
[[layers]]
kind = "relu"
[[layers]]
kind = "flatten"
[[layers]]
kind = "linear"
out_features = 10
"""
