"""Simulated FPGA board: RTL of the DPR shell, its Verilator builds and the compiled bulk harness."""
