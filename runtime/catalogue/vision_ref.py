"""OpenCV goldens for every vision module and preset: what the RTL must equal bit for bit.

These are also the CPU fallback the apps use when the runtime refuses a stage.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from fpgashare.catalogue.modules import PRESETS, THRESHOLD_TYPES, Stage, resolve_stage

_CV_THRESH_NAMES = {v: k for k, v in THRESHOLD_TYPES.items()}


def _cv2():
    import cv2  # deferred: the board image may run without OpenCV until a fallback is needed

    return cv2


def _signed16(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def conv3x3_reference(frame: np.ndarray, regs: Mapping[str, int]) -> np.ndarray:
    """The conv3x3 register semantics in numpy (any kernel, not only the presets)."""
    k = np.array([_signed16(regs.get(f"K{n}", 0)) for n in range(9)], dtype=np.int64).reshape(3, 3)
    p = np.pad(frame.astype(np.int64), 1, mode="edge")
    rows, cols = frame.shape
    s = np.zeros((rows, cols), dtype=np.int64)
    for dy in range(3):
        for dx in range(3):
            s += k[dy, dx] * p[dy : dy + rows, dx : dx + cols]
    shift = regs.get("SHIFT", 0) & 31
    s = s * (regs.get("MUL", 1) & 0xFFFF)
    if shift:
        s = (s + (1 << (shift - 1))) >> shift
    if regs.get("FLAGS", 0) & 1:
        s = np.abs(s)
    return np.clip(s, 0, 255).astype(np.uint8)


_HSV_SHIFT = 12


def _hsv_tables() -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's 12-bit reciprocal tables (cvRound = half to even, as np.rint); entry 0 is 0."""
    i = np.arange(256, dtype=np.float64)
    i[0] = 1.0
    sdiv = np.rint((255 << _HSV_SHIFT) / i).astype(np.int64)
    hdiv = np.rint((180 << _HSV_SHIFT) / (6.0 * i)).astype(np.int64)
    sdiv[0] = hdiv[0] = 0
    return sdiv, hdiv


def rgb2hsv_reference(rgb: np.ndarray) -> np.ndarray:
    """cv2.cvtColor(rgb, COLOR_RGB2HSV) on uint8 by OpenCV's integer rule (what rgb2hsv.sv computes);
    equal to cv2 on all 2^24 colours (tests/test_vision_catalogue.py)."""
    sdiv, hdiv = _hsv_tables()
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    v = np.maximum(np.maximum(r, g), b)
    d = v - np.minimum(np.minimum(r, g), b)
    half = 1 << (_HSV_SHIFT - 1)
    s = (d * sdiv[v] + half) >> _HSV_SHIFT
    h = np.where(v == r, g - b, np.where(v == g, b - r + 2 * d, r - g + 4 * d))
    h = (h * hdiv[d] + half) >> _HSV_SHIFT
    h = np.where(h < 0, h + 180, h)
    return np.stack([h, s, v], axis=-1).astype(np.uint8)


def binary_moments(mask: np.ndarray) -> dict[str, int]:
    """m00, m10, m01 of a mask whose nonzero pixels count 1 (cv2.moments(mask, binaryImage=True)),
    as exact integers: what the moments module's registers hold after the frame."""
    ys, xs = np.nonzero(mask)
    return {"M00": int(xs.size), "M10": int(xs.sum(dtype=np.int64)), "M01": int(ys.sum(dtype=np.int64))}


def template_best(frame: np.ndarray, template: np.ndarray) -> dict[str, int]:
    """The least sum of squared differences of ``template`` over ``frame`` and its top-left corner,
    the first in row-major order on a tie: cv2.minMaxLoc(cv2.matchTemplate(frame, template,
    cv2.TM_SQDIFF)) in exact integers (what template_match's registers hold after the frame; all
    ones when the frame is smaller than the template)."""
    t = template.shape[0]
    rows, cols = frame.shape
    if rows < t or cols < t:
        return {"BEST": 0xFFFFFFFF, "BEST_X": 0xFFFF, "BEST_Y": 0xFFFF}
    windows = np.lib.stride_tricks.sliding_window_view(frame.astype(np.int32), (t, t))
    scores = ((windows - template.astype(np.int32)) ** 2).sum(axis=(2, 3))
    y, x = np.unravel_index(int(np.argmin(scores)), scores.shape)      # argmin: the first minimum
    return {"BEST": int(scores[y, x]), "BEST_X": int(x), "BEST_Y": int(y)}


def bg_update_reference(x: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """b + ((x - b) >> k), the shift flooring (OpenCV's accumulateWeighted is float, so numpy)."""
    b16 = b.astype(np.int16)
    return (b16 + ((x.astype(np.int16) - b16) >> k)).astype(np.uint8)


#: FAST's 16-pixel circle of radius 3 as (dx, dy), in OpenCV's order (arcs are taken cyclically).
FAST_CIRCLE = ((0, 3), (1, 3), (2, 2), (3, 1), (3, 0), (3, -1), (2, -2), (1, -3),
               (0, -3), (-1, -3), (-2, -2), (-3, -1), (-3, 0), (-3, 1), (-2, 2), (-1, 3))


def fast9_reference(gray: np.ndarray, threshold: int) -> np.ndarray:
    """FAST-9 with non-maximum suppression as an image: each keypoint's response where
    cv2.FastFeatureDetector_create(threshold, nonmaxSuppression=True) finds one, 0 elsewhere
    (what fast9.sv computes; tests/test_vision_catalogue.py holds it to cv2's keypoints)."""
    rows, cols = gray.shape
    v = gray.astype(np.int16)      # differences fit in -255..255
    pad = np.pad(v, 3, mode="edge")
    d = [v - pad[3 + dy:3 + dy + rows, 3 + dx:3 + dx + cols] for dx, dy in FAST_CIRCLE]
    # A pixel's response: the best over the 16 arcs of 9 of the least margin on one side (the arc's
    # minimum difference, or minus its maximum). An arc's extremes come from those of its spans of 2
    # and 4, shared by the arcs around it: 4 operations an arc instead of 8 (a full-HD frame in a
    # fraction of a second).
    lo2 = [np.minimum(d[k], d[(k + 1) % 16]) for k in range(16)]
    hi2 = [np.maximum(d[k], d[(k + 1) % 16]) for k in range(16)]
    lo4 = [np.minimum(lo2[k], lo2[(k + 2) % 16]) for k in range(16)]
    hi4 = [np.maximum(hi2[k], hi2[(k + 2) % 16]) for k in range(16)]
    best = np.full((rows, cols), -256, dtype=np.int16)
    for k in range(16):
        lo = np.minimum(np.minimum(lo4[k], lo4[(k + 4) % 16]), d[(k + 8) % 16])
        hi = np.maximum(np.maximum(hi4[k], hi4[(k + 4) % 16]), d[(k + 8) % 16])
        np.maximum(best, np.maximum(lo, -hi), out=best)
    score = np.where(best > threshold, best.astype(np.int32) - 1, 0)
    score[:3], score[rows - 3:], score[:, :3], score[:, cols - 3:] = 0, 0, 0, 0
    around = np.pad(score, 1)
    keep = score > 0
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                keep &= score > around[1 + dy:1 + dy + rows, 1 + dx:1 + dx + cols]
    return np.where(keep, score, 0).astype(np.uint8)


def fast9_keypoints(out: np.ndarray) -> set[tuple[int, int, int]]:
    """(x, y, response) of every keypoint in a fast9 output image."""
    ys, xs = np.nonzero(out)
    return {(int(x), int(y), int(out[y, x])) for x, y in zip(xs, ys, strict=True)}


def preset_reference(name: str, frame: np.ndarray) -> np.ndarray:
    """The OpenCV call each preset stands for."""
    cv2 = _cv2()
    border = cv2.BORDER_REPLICATE
    if name == "gauss3x3":
        return cv2.GaussianBlur(frame, (3, 3), 0, borderType=border)
    if name == "box3x3":
        return cv2.blur(frame, (3, 3), borderType=border)
    if name == "sharpen3x3":
        kernel = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float32)
        return cv2.filter2D(frame, -1, kernel, borderType=border)
    if name == "laplacian3x3":
        return cv2.convertScaleAbs(cv2.Laplacian(frame, cv2.CV_16S, ksize=1, borderType=border))
    if name == "sobel_x":
        return cv2.convertScaleAbs(cv2.Sobel(frame, cv2.CV_16S, 1, 0, ksize=3, borderType=border))
    if name == "sobel_y":
        return cv2.convertScaleAbs(cv2.Sobel(frame, cv2.CV_16S, 0, 1, ksize=3, borderType=border))
    raise KeyError(name)


def stage_reference(stage: Stage, frame: np.ndarray) -> np.ndarray:
    """OpenCV (or, for non-preset kernels, numpy) result of one stage on one frame."""
    cv2 = _cv2()
    kind = stage.kind.name
    if kind == "conv3x3":
        if stage.name in PRESETS and dict(stage.regs) == dict(resolve_stage(stage.name).regs):
            return preset_reference(stage.name, frame)
        return conv3x3_reference(frame, stage.regs)
    if kind == "sobel_mag":
        border = cv2.BORDER_REPLICATE
        gx = cv2.Sobel(frame, cv2.CV_16S, 1, 0, ksize=3, borderType=border).astype(np.int32)
        gy = cv2.Sobel(frame, cv2.CV_16S, 0, 1, ksize=3, borderType=border).astype(np.int32)
        return np.clip(np.abs(gx) + np.abs(gy), 0, 255).astype(np.uint8)
    if kind == "threshold":
        typ = stage.regs.get("TYPE", 0)
        if typ not in _CV_THRESH_NAMES:
            return frame.copy()
        flag = getattr(cv2, f"THRESH_{_CV_THRESH_NAMES[typ].upper()}")
        thresh = stage.regs.get("THRESH", 127) & 0xFF
        maxval = stage.regs.get("MAXVAL", 255) & 0xFF
        return cv2.threshold(frame, thresh, maxval, flag)[1]
    if kind == "downscale2x":
        rows, cols = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
        crop = np.ascontiguousarray(frame[:rows, :cols])
        return cv2.resize(crop, (cols // 2, rows // 2), interpolation=cv2.INTER_AREA)
    if kind == "rgb2gray":
        coeffs = (stage.regs.get("CR"), stage.regs.get("CG"), stage.regs.get("CB"), stage.regs.get("SHIFT"))
        if coeffs == (9798, 19235, 3735, 15):
            return cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        # As rgb2gray.sv reads them: each coefficient's low 16 bits, unsigned, and the shift's low 5
        # (any 32-bit word a client sends is a register value: it must not fault the twin).
        cr, cg, cb = (int(c) & 0xFFFF for c in coeffs[:3])
        shift = int(coeffs[3]) & 31
        rgb = frame.astype(np.int64)
        acc = cr * rgb[..., 0] + cg * rgb[..., 1] + cb * rgb[..., 2] + ((1 << (shift - 1)) if shift else 0)
        return np.clip(acc >> shift, 0, 255).astype(np.uint8)
    if kind in ("erode3x3", "dilate3x3"):
        op = cv2.erode if kind == "erode3x3" else cv2.dilate
        return op(frame, np.ones((3, 3), np.uint8), borderType=cv2.BORDER_REPLICATE)
    if kind == "median3x3":
        return cv2.medianBlur(frame, 3)
    if kind == "rgb2hsv":
        return cv2.cvtColor(frame, cv2.COLOR_RGB2HSV)
    if kind == "in_range":
        # Tuples are cv2 Scalars: per-channel bounds.
        lo = tuple(float(stage.regs.get(f"LO{k}", 0) & 0xFF) for k in range(3))
        hi = tuple(float(stage.regs.get(f"HI{k}", 255) & 0xFF) for k in range(3))
        return cv2.inRange(frame, lo, hi)
    if kind == "absdiff":
        return cv2.absdiff(frame[..., 0], frame[..., 1])
    if kind == "bg_update":
        return bg_update_reference(frame[..., 0], frame[..., 1], stage.regs.get("K", 4) & 15)
    if kind == "fast9":
        return fast9_reference(frame, min(max(stage.regs.get("THRESH", 10), 0), 255))
    if kind in ("moments", "template_match"):
        return frame.copy()        # the pixels pass through; the results are registers
    raise KeyError(kind)


def stage_results(stage: Stage, frame: np.ndarray) -> dict[str, int] | None:
    """The result registers ``stage`` leaves after ``frame`` (its input), as the board reads them
    (32-bit words), or None for a stage without any: moments' M00, M10_LO/HI, M01_LO/HI and
    template_match's BEST, BEST_X, BEST_Y."""
    kind = stage.kind.name
    if kind == "moments":
        m = binary_moments(frame)
        return {"M00": m["M00"], "M10_LO": m["M10"] & 0xFFFFFFFF, "M10_HI": m["M10"] >> 32,
                "M01_LO": m["M01"] & 0xFFFFFFFF, "M01_HI": m["M01"] >> 32}
    if kind == "template_match":
        words = [stage.regs.get(f"T{j}", 0) & 0xFFFFFFFF for j in range(13)]
        flat = np.array([(w >> (8 * k)) & 0xFF for w in words for k in range(4)][:49], np.uint8)
        return template_best(frame, flat.reshape(7, 7))
    return None


def chain_results(stages: list[Stage], frame: np.ndarray) -> tuple[np.ndarray, dict[str, dict[str, int]]]:
    """``chain_reference``'s output and every stage's result registers (``stage_results``), by stage name."""
    out, results = frame, {}
    for stage in stages:
        regs = stage_results(stage, out)
        if regs is not None:
            results[stage.name] = regs
        out = stage_reference(stage, out)
    return out, results


def chain_reference(stages: list[Stage], frame: np.ndarray) -> np.ndarray:
    """Apply stages in order."""
    out = frame
    for stage in stages:
        out = stage_reference(stage, out)
    return out
