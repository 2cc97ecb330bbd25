"""The digit reader app with an imported ONNX model (the shipped digits_qdq): crops go in as float
crop / 255, the client converts the model and the daemon runs it; every reading is the import's
reference on the crop, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.dnn.onnx_import import import_onnx
from fpgashare.dnn.onnx_shipped import SHIPPED_ONNX

from tests.test_apps import _run, digit_video  # noqa: F401  (the fixture)
from tests.test_daemon import RunningDaemon

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("platform", ["zcu104", "pynq-z2"])
def test_digits_app_reads_with_an_imported_model(tmp_path, digit_video, capsys, platform):  # noqa: F811
    from fpgashare.apps import digits

    sock = tmp_path / "s.sock"
    with RunningDaemon(sock, dilation=10.0, platform=platform):
        summary, _, _ = _run(digits, sock, digit_video, tmp_path, capsys, extra=["--model", "digits_qdq"])
    data = np.load(tmp_path / f"{digits.__name__}.npz")
    imported = import_onnx(SHIPPED_ONNX["digits_qdq"])
    crops = data["crops"].astype(np.float32)[:, None] / np.float32(255)
    assert summary["frames"] == "3" and int(summary["digits"]) == len(crops) == 9
    assert summary["cpu"] == "0"          # both boards run it on their dnn_tile slots
    assert np.array_equal(data["logits"], imported.reference(crops))
