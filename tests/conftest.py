import os

# Before MindSpore or our library load: every kernel runs with the twin's strict checks, and
# MindSpore's INFO/WARNING chatter stays out of the test output.
os.environ.setdefault("MS_OPS_TWIN_STRICT", "1")
os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

MODES = {"graph": ms.GRAPH_MODE, "pynative": ms.PYNATIVE_MODE}


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", help="run the full grid (marker 'full')")


def pytest_configure(config):
    config.addinivalue_line("markers", "full: part of the full grid; runs with --full or MS_OPS_TEST_FULL=1")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full") or os.environ.get("MS_OPS_TEST_FULL") == "1":
        return
    skip = pytest.mark.skip(reason="full grid: run with --full")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request):
    """Runs the test once in GRAPH_MODE and once in PYNATIVE_MODE."""
    ms.set_context(mode=MODES[request.param])
    return request.param


@pytest.fixture(autouse=True)
def _seed_and_mode():
    """Seeds every test, and puts PYNATIVE mode back even when a test that set GRAPH mode fails."""
    np.random.seed(1234)
    ms.set_seed(1234)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
