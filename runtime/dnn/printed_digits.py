"""Printed digits as a camera sees them: how the demo prints them, how a reader cuts them out of a
frame, and seeded sets of such crops (with camera-like damage) to train and test a reader on.

One function cuts crops for everyone (:func:`digit_crops`): the digits app, the training set and
the tests, so a model meets at run time exactly the kind of input it learned from. A crop is the
square around a bright blob's bounding box (1.25 times its height) of the thresholded frame,
shrunk to the network's input with area averaging and scaled to 0..240 like scikit-learn's digits.

``NOT_A_DIGIT`` (class 10) is what a reader should say of a bright blob that is no digit: the
demo's ball, a box, a blob at the frame's edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOT_A_DIGIT = 10
MIN_SIDE, MAX_SIDE = 10, 200      # pixels: the heights of blobs that can be digits
MARGIN = 1.25                     # crop side / blob height
LEVEL = 127                       # the threshold that makes a frame's bright blobs
#: cv2 font ids (cv2.FONT_HERSHEY_*): the demo prints with the first two; training sees all five.
DEMO_FONTS = (0, 2)               # SIMPLEX, DUPLEX
TRAIN_FONTS = (0, 2, 3, 4, 1)     # + COMPLEX, TRIPLEX, PLAIN


@dataclass(frozen=True)
class Printed:
    """One digit printed into a frame: what and where (its text box, x0, y0, w, h)."""

    digit: int
    box: tuple[int, int, int, int]

    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return x + w / 2, y + h / 2


def text_scale(height_px: float, font: int) -> float:
    """putText's fontScale that makes a digit about ``height_px`` pixels tall."""
    import cv2

    (_, h), _ = cv2.getTextSize("0", font, 1.0, 1)
    return height_px / h


def print_digit(img: np.ndarray, digit: int, org: tuple[int, int], font: int, scale: float, thickness: int,
                colour: tuple[int, ...]) -> Printed:
    """Draw ``digit`` with its baseline's left end at ``org`` (cv2.putText); return where it went."""
    import cv2

    cv2.putText(img, str(digit), org, font, scale, colour, thickness, cv2.LINE_AA)
    (w, h), _ = cv2.getTextSize(str(digit), font, scale, thickness)
    return Printed(digit, (org[0], org[1] - h, w, h))


def digit_crops(gray: np.ndarray, side: int = 8) -> list[tuple[tuple[int, int, int, int], np.ndarray]]:
    """(box, side x side uint8 crop) of each digit-sized bright blob of ``gray``, left to right."""
    import cv2

    _, mask = cv2.threshold(gray, LEVEL, 255, cv2.THRESH_BINARY)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    found = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if not (MIN_SIDE <= h <= MAX_SIDE and w <= h):
            continue
        size = int(h * MARGIN)
        x0, y0 = x + w // 2 - size // 2, y + h // 2 - size // 2
        # The square may hang over the frame's edge: what lies outside is dark.
        patch = np.zeros((size, size), np.uint8)
        sx, sy = max(0, x0), max(0, y0)
        part = mask[sy:y0 + size, sx:x0 + size]
        patch[sy - y0:sy - y0 + part.shape[0], sx - x0:sx - x0 + part.shape[1]] = part
        small = cv2.resize(patch, (side, side), interpolation=cv2.INTER_AREA)
        found.append(((x0, y0, size, size), (small.astype(np.uint16) * 240 // 255).astype(np.uint8)))
    return sorted(found, key=lambda item: item[0][0])


def match(printed: list[Printed], found: list[tuple[tuple[int, int, int, int], object]]) -> list[object | None]:
    """For each printed digit, the payload of the crop whose box holds its centre (None if none)."""
    out = []
    for p in printed:
        cx, cy = p.centre()
        hits = [payload for (x, y, w, h), payload in found if x <= cx < x + w and y <= cy < y + h]
        out.append(hits[0] if len(hits) == 1 else None)
    return out


# ---- seeded training and test sets
def _background(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A dark textured ground, below the threshold everywhere."""
    import cv2

    low = rng.normal(0, 1, (max(2, rows // 8), max(2, cols // 8)))
    tex = cv2.resize(low, (cols, rows), interpolation=cv2.INTER_CUBIC)
    base = rng.uniform(0, 70)
    return np.clip(base + rng.uniform(0, 20) * tex + rng.normal(0, 3, (rows, cols)), 0, 100).astype(np.uint8)


def camera(rng: np.random.Generator, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What a camera and a codec do to a frame: a small rotation, scale, shear and shift, blur,
    noise, JPEG. Returns the frame and the 2x3 affine map it went through."""
    import cv2

    rows, cols = gray.shape
    angle, shear = rng.uniform(-6, 6), rng.uniform(-0.12, 0.12)
    m = cv2.getRotationMatrix2D((cols / 2, rows / 2), angle, rng.uniform(0.9, 1.1))
    m[0, 1] += shear
    m[:, 2] += rng.uniform(-0.06, 0.06, 2) * (cols, rows)
    img = cv2.warpAffine(gray, m, (cols, rows), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    sigma = rng.uniform(0, 1.6)
    if sigma > 0.3:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    img = np.clip(img + rng.normal(0, rng.uniform(0, 8), img.shape), 0, 255).astype(np.uint8)
    _, jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(40, 96))])
    return cv2.imdecode(jpg, cv2.IMREAD_GRAYSCALE), m


def _one_digit(rng: np.random.Generator, digit: int, fonts: tuple[int, ...]) -> tuple[np.ndarray, Printed]:
    height = rng.uniform(12, 90)
    rows, cols = int(height * 2.2), int(height * 2.6)
    img = _background(rng, rows, cols)
    font = int(fonts[rng.integers(len(fonts))])
    thickness = max(1, round(height * rng.uniform(0.06, 0.14)))
    scale = text_scale(height, font)
    org = (int(cols / 2 - height * 0.35 + rng.uniform(-0.1, 0.1) * height),
           int(rows / 2 + height / 2 + rng.uniform(-0.1, 0.1) * height))
    printed = print_digit(img, digit, org, font, scale, thickness, (int(rng.integers(170, 256)),))
    return img, printed


def _one_shape(rng: np.random.Generator) -> np.ndarray:
    """A bright blob that is no digit: a disc (the demo's ball), a box, a triangle, an ellipse,
    any of them cut by the frame's edge."""
    import cv2

    size = rng.uniform(12, 120)
    rows = cols = int(size * 2.2)
    img = _background(rng, rows, cols)
    c = (cols // 2 + int(rng.uniform(-0.5, 0.5) * size), rows // 2 + int(rng.uniform(-0.5, 0.5) * size))
    colour = (int(rng.integers(150, 256)),)
    kind = rng.integers(4)
    if kind == 0:
        cv2.circle(img, c, int(size / 2), colour, -1, cv2.LINE_AA)
    elif kind == 1:
        w, h = int(size * rng.uniform(0.4, 1.0)), int(size)
        cv2.rectangle(img, (c[0] - w // 2, c[1] - h // 2), (c[0] + w // 2, c[1] + h // 2), colour, -1)
    elif kind == 2:
        pts = np.array([c]) + rng.uniform(-size / 2, size / 2, (3, 2))
        cv2.fillPoly(img, [pts.astype(np.int32)], colour, cv2.LINE_AA)
    else:
        axes = (int(size * rng.uniform(0.2, 0.5)), int(size / 2))
        cv2.ellipse(img, c, axes, rng.uniform(-30, 30), 0, 360, colour, -1, cv2.LINE_AA)
    return img


def rendered_set(seed: int, digits: int, shapes: int = 0, fonts: tuple[int, ...] = TRAIN_FONTS,
                 side: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """``digits`` printed digits (10 classes in turn) and ``shapes`` non-digits (class 10), each drawn
    on its own textured ground, damaged by :func:`camera` and cut out by :func:`digit_crops`; a
    sample whose blob the cutter does not find (broken strokes, blur) is drawn again."""
    rng = np.random.default_rng(seed)
    images, labels = [], []
    wanted = [k % 10 for k in range(digits)] + [NOT_A_DIGIT] * shapes
    for label in wanted:
        for _ in range(20):
            if label == NOT_A_DIGIT:
                gray, _ = camera(rng, _one_shape(rng))
                found = digit_crops(gray, side)
                crop = max(found, key=lambda f: f[0][2])[1] if found else None
            else:
                img, printed = _one_digit(rng, label, fonts)
                gray, m = camera(rng, img)
                cx, cy = m @ (*printed.centre(), 1.0)
                moved = Printed(label, (int(cx), int(cy), 1, 1))
                crop = match([moved], digit_crops(gray, side))[0]
            if crop is not None:
                images.append(crop)
                labels.append(label)
                break
    return np.stack(images), np.array(labels, np.int64)
