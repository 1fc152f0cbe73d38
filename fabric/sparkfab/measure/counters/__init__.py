"""RDMA counters: sampled at 1 ms (`sampler`, its read loop in C, `_sampleloop.c`) and read back
as traffic over time, split into each request's prefill and decode windows (`traffic`)."""
