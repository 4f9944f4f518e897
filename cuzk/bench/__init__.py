"""Benchmarks, one package: the ``cuzk-bench`` tool for a running daemon (:mod:`cuzk.bench.main`) and the
benchmark scripts, each run as ``python -m cuzk.bench.NAME`` from the repository root:

- ``gpu_kernels``: G1/G2 MSM, NTT, upload and multiply-rate probes on the device, variants side by side
- ``gpu_prove``: end-to-end GPU proving on synthetic circuits, per-phase breakdown
- ``gpu_bisect``: which configuration breaks a GPU prove, each in a fresh process
- ``make_gpu_vectors``: GPU-made proofs of the circom fixtures (tests/vectors/gpu)
- ``msm_kernel_profile``, ``ntt_kernel_profile``: one MSM / NTT run for a kernel profiler (ncu)
- ``cpu_vs_snarkjs``: the CPU backend against snarkjs
- ``daemon_bench``: the proving daemon's throughput, overhead and SRS latency

``device_run.sh`` and ``ncu_profile.sh`` drive a device session; ``kernels/`` holds the bench-only CUDA
module. Raw results are kept in ``bench/results/`` at the repository root, the tables in BENCHMARKS.md.
"""
