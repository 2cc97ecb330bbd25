"""The demo's video: a textured ground with printed digits and moving shapes, written to a file
the apps read as their camera, and the digit reader's readings scored against what was printed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fpgashare.errors import FpgashareError


def _texture(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A static dark ground with some texture, tinted, below the digit reader's threshold."""
    import cv2

    low = rng.normal(0, 1, (max(2, rows // 24), max(2, cols // 24), 3))
    tex = cv2.resize(low, (cols, rows), interpolation=cv2.INTER_CUBIC)
    fine = rng.normal(0, 1, (rows, cols, 1))
    return np.clip(45 + 14 * tex + 5 * fine, 10, 90).astype(np.uint8)


def demo_frames(frames: int, size: tuple[int, int] = (120, 160), seed: int = 3):
    """The demo's video, frame by frame: (BGR frame, the digits printed on it). A textured ground,
    an orange ball and a blue box moving across, and two groups of printed digits: four large ones
    at the bottom (cv2.FONT_HERSHEY_SIMPLEX) that change every third frame, two smaller ones at the
    top right (DUPLEX) that drift; every frame blurred and noised a little, like a camera's."""
    import cv2
    from fpgashare.dnn.printed_digits import DEMO_FONTS, print_digit, text_scale

    rows, cols = size
    rng = np.random.default_rng(seed)
    ground = _texture(rng, rows, cols)
    big, small = rows / 7, max(16.0, rows / 10)
    groups = [  # (font, height, thickness, x of the first digit, baseline, pitch, drift per frame)
        (DEMO_FONTS[0], big, max(2, round(big / 11)), cols // 16, rows - rows // 12, big * 0.95, 0),
        (DEMO_FONTS[1], small, max(2, round(small / 10)), cols - cols // 3, rows // 6, small * 1.05, -cols / 160)]
    values: list[np.ndarray] = []
    for k in range(frames):
        if k % 3 == 0:
            values = [rng.integers(0, 10, 4), rng.integers(0, 10, 2)]
        frame = ground.copy()
        radius = rows // 8
        x = int((k * cols / 24) % (cols + 2 * radius)) - radius
        cv2.circle(frame, (x, rows // 3), radius, (0, 180, 255), -1, cv2.LINE_AA)
        bx = cols - cols // 4 - int(k * cols / 48) % (cols // 2)
        cv2.rectangle(frame, (bx, rows // 2), (bx + cols // 6, rows // 2 + rows // 6), (255, 90, 30), -1)
        printed = []
        for (font, height, thick, x0, base, pitch, drift), digits in zip(groups, values, strict=True):
            for i, digit in enumerate(digits):
                org = (int(x0 + i * pitch + k * drift), int(base))
                printed.append(print_digit(frame, int(digit), org, font, text_scale(height, font), thick,
                                           (235, 235, 235)))
        frame = cv2.GaussianBlur(frame, (3, 3), 0.7)
        frame = np.clip(frame + rng.normal(0, 2, frame.shape), 0, 255).astype(np.uint8)
        yield frame, printed


def write_video(path: Path, frames: int, size: tuple[int, int] = (120, 160), seed: int = 3) -> list[list]:
    """Write :func:`demo_frames` with OpenCV (MJPG) at 30 fps; return the digits printed per frame."""
    import cv2

    rows, cols = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (cols, rows))
    if not writer.isOpened():
        raise FpgashareError(f"OpenCV cannot write {path}")
    truth = []
    for frame, printed in demo_frames(frames, size, seed):
        writer.write(frame)
        truth.append(printed)
    writer.release()
    return truth


def make_video(path: Path, frames: int, size: tuple[int, int] = (120, 160), seed: int = 3) -> Path:
    """Write the demo's video (:func:`write_video`); return its path."""
    write_video(path, frames, size, seed)
    return path


def score_readings(truth: list[list], readings: list[dict]) -> dict:
    """How many printed digits the reader read right: each printed digit against the reading whose
    box holds its centre in the same frame (printed_digits.match)."""
    from fpgashare.dnn.printed_digits import NOT_A_DIGIT, match

    printed = right = 0
    for k, digits in enumerate(truth):
        found = [(tuple(r["box"]), r["label"]) for r in readings if r["frame"] == k]
        labels = match(digits, found)
        printed += len(digits)
        right += sum(label == d.digit for d, label in zip(digits, labels, strict=True))
    not_digits = sum(r["label"] == NOT_A_DIGIT for r in readings)
    return {"printed": printed, "read_right": right, "accuracy": round(right / printed, 4) if printed else None,
            "not_digits": not_digits}
