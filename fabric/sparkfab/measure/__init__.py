"""Measurement: the network-cost estimate, the 1 ms counter sampler, the benchmark driver."""
