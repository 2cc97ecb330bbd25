"""The fleet without Ray: the package imports, every other command works, and ``fpgashare fleet``
says how to install the extra (exit 2). Ray's node table read into boards (no cluster needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import BOARD, STREAM, boards_from_nodes, node_labels, node_resources

# Runs a command with `import ray` failing, as where the fleet extra is not installed.
NO_RAY = """
import sys
class NoRay:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray'")
sys.meta_path.insert(0, NoRay())
from fpgashare.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_ray(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_RAY, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv", [["fleet", "status"], ["fleet", "up", "--boards", "2"],
                                  ["fleet", "bench", "two_edges_720p", "--boards", "2"]])
def test_fleet_commands_say_how_to_install(argv):
    done = run_without_ray(*argv)
    assert done.returncode == 2
    assert done.stderr.strip() == 'error: the fleet needs Ray: pip install "fpgashare[fleet]"'
    assert "Traceback" not in done.stderr


def test_other_commands_and_the_package_work_without_ray():
    done = run_without_ray("bench", "two_edges_720p", "--scheduler", "edf", "--json")
    assert done.returncode == 0, done.stderr
    code = "import sys; sys.modules['ray'] = None\nimport fpgashare, fpgashare.fleet\n" \
           "assert not fpgashare.fleet.ray_available(); print(fpgashare.fleet.PipelineMoved('p', 'a', 'b'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "PipelineMoved(pipeline='p'" in done.stdout


def test_bad_fleet_arguments_are_named():
    from fpgashare.fleet.commands import parse_boards

    with pytest.raises(FpgashareError, match="unknown platform 'kv260'"):
        parse_boards("zcu104,kv260", 2)
    with pytest.raises(FpgashareError, match="--boards must be >= 1"):
        parse_boards("zcu104", 0)
    assert [(b.name, b.platform) for b in parse_boards("zcu104,pynq-z2", 3)] == [
        ("b1", "zcu104"), ("b2", "pynq-z2"), ("b3", "zcu104")]


def test_boards_from_ray_nodes():
    nodes = [
        {"NodeID": "head", "Alive": True, "Resources": {"CPU": 2.0}, "Labels": {}},
        {"NodeID": "n1", "Alive": False, "Resources": node_resources("b1"),
         "Labels": node_labels("b1", "zcu104", ["cam0", "cam-1"])},
        {"NodeID": "n2", "Alive": True, "Resources": node_resources("b1"),      # b1 came back on a new node
         "Labels": node_labels("b1", "zcu104", ["cam0", "cam-1"])},
        {"NodeID": "n3", "Alive": False, "Resources": {**node_resources("b2"), STREAM: 800.0},
         "Labels": node_labels("b2", "pynq-z2")},
    ]
    boards = boards_from_nodes(nodes)
    assert set(boards) == {"b1", "b2"}
    assert boards["b1"].node_id == "n2" and boards["b1"].alive and boards["b1"].cameras == ("cam0", "cam-1")
    assert boards["b2"].platform == "pynq-z2" and not boards["b2"].alive and boards["b2"].stream_milli == 800.0
    assert node_resources("b1")[BOARD] == 1.0 and node_resources("b1")["fpga:b1"] == 1.0
    with pytest.raises(FpgashareError, match=r"camera name 'a\.b'"):
        node_labels("b1", "zcu104", ["a.b"])
