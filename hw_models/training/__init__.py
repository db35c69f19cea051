"""Training-iteration simulator: DNN workloads, compute models, timeline and communication policies."""
