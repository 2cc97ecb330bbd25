"""Cycle model of a vision chain in the shell: when the last output pixel of a frame leaves.

A stream beat carries the platform's pixels_per_clock (NPPC) pixels and every row is whole beats, so
below W is a row's beats, ceil(width / NPPC); a window's right-edge context is ceil(R / NPPC) beats.
Each stage consumes its input at one step per cycle: a 3x3 module takes (H+1)*(W+1) steps (one
replicated bottom pass and one replicated right-edge step per row), a pointwise module or
downscale2x H*W. A stage starts once its upstream has produced its first pixel (a 3x3 module
after W+2 steps, others after one) and cannot finish before its upstream has finished plus its own
tail (a 3x3 module still owes its bottom pass, W+1 steps). The constants below are the fixed
latencies of the shell's boundary slices and links, measured on the RTL (tests/test_backends.py
holds the model to the RTL within 2% on frames of 64x64 and up). Not modelled: a downscale2x
behind a 3x3 stage on an odd number of rows finishes up to a row earlier than predicted.

Memory: a frame's input is read and its output written by the shell's DMA; a two-input module
(absdiff, bg_update) reads its reference frame beside the frame, one byte per pixel each, through
the same stream. The DMA's memory port moves ``mem_bytes_per_cycle(nppc)``, so a frame cannot
finish before its traffic has moved; in the shipped chains the stream, not memory, is the bound
(an RGB chain at NPPC 4 moves 12 + 1 bytes a beat, under the 128-bit port's 16; a gray chain 4 + 4).
"""

from __future__ import annotations

from collections.abc import Sequence

from fpgashare.catalogue.modules import Stage

WINDOWED = frozenset({"conv3x3", "sobel_mag", "erode3x3", "dilate3x3", "median3x3"})
BASE_LATENCY = 4        #: input slice + first stage + output slice
STAGE_LATENCY = 3       #: each further stage: its link and its output register
WINDOW_TAIL_EXTRA = 4   #: a 3x3 stage's bottom pass ends this many cycles after its last input
INNER_LATENCY = 0       #: between two phases inside one stage (fast9's score feeds its NMS window directly)
MEM_BYTES_PER_CYCLE = 8  #: assumption: one 64-bit AXI HP port at the fabric clock for the DMA (NPPC 1)


def mem_bytes_per_cycle(nppc: int) -> int:
    """The DMA's memory port per fabric cycle: 64 bits at NPPC 1; 128 bits at NPPC 4, as a 128-bit
    stream of RGB lanes needs (ZynqMP's S_AXI_HP ports are 128 bits wide, UG1085; an assumption on
    Zynq-7000, whose HP ports are 64). A gray chain's 8 bytes a beat fit either port, so a shell
    that keeps the 32-bit stream (``Platform.stream_words``) times the same."""
    return MEM_BYTES_PER_CYCLE if nppc == 1 else 16


def frame_memory_bytes(stages: Sequence[Stage], rows: int, cols: int, nppc: int = 1) -> tuple[int, int]:
    """(bytes read, bytes written) in memory by one frame: every input channel (frame, reference,
    RGB) a byte per pixel, the output a byte per pixel (bg_update's output is the stored background);
    at NPPC > 1 rows are whole beats (their stride padded to the bus width)."""
    def row_bytes(width: int) -> int:
        return -(-width // nppc) * nppc

    read = rows * row_bytes(cols) * stages[0].kind.channels_in
    h, w = rows, cols
    for stage in stages:
        h, w = stage.kind.output_shape(h, w)
    return read, h * row_bytes(w) * stages[-1].kind.channels_out


def _phases(name: str, halves: bool, h: int, w: int, nppc: int = 1) -> list[tuple[int, int, int]]:
    """(steps, tail, start) of each streaming phase of a stage: input steps a frame takes, cycles
    its last output lags its last input, and steps before its first output. ``w`` is in beats."""
    if name in WINDOWED:
        return [((h + 1) * (w + 1), w + 1 + WINDOW_TAIL_EXTRA, w + 2)]
    if name in ("fast9", "template_match"):   # a 7x7 window (3 replicated passes, ceil(3/NPPC) steps)
        rb = -(-3 // nppc)
        window = (3 * w + h * (w + rb), 3 * (w + rb) + WINDOW_TAIL_EXTRA, 3 * w + rb + 1)
        # fast9's scores then go through the 3x3 suppression window; template_match's pixels leave.
        return [window, ((h + 1) * (w + 1), w + 1 + WINDOW_TAIL_EXTRA, w + 2)] if name == "fast9" else [window]
    if halves:
        return [((h // 2 * 2) * w, 0, 1)]      # an odd last row is consumed after the last output
    return [(h * w, 0, 1)]


def chain_cycles(stages: Sequence[Stage], rows: int, cols: int, nppc: int = 1) -> int:
    """Fabric cycles from a frame's first input beat to its last output beat, at ``nppc`` pixels per beat."""
    start = end = 0
    h, w = rows, cols
    for k, stage in enumerate(stages):
        beats = -(-w // nppc)
        for n, (steps, tail, first) in enumerate(_phases(stage.kind.name, stage.kind.halves, h, beats, nppc)):
            latency = (BASE_LATENCY if k == 0 else STAGE_LATENCY) if n == 0 else INNER_LATENCY
            end = max(start + steps, end + tail) + latency
            start += first
        h, w = stage.kind.output_shape(h, w)
    read, written = frame_memory_bytes(stages, rows, cols, nppc)
    return max(end, -(-(read + written) // mem_bytes_per_cycle(nppc)))
