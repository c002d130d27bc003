"""The suite runs on one backend per process: ``OP2RS_TEST_BACKEND`` (PyOP2's names, or op2-rs's
such as ``cuda-emulator``), ``sequential`` by default. ``cargo xtask test`` runs it on each."""

import os

import pytest

from op2rs import op2


@pytest.fixture(scope="session", autouse=True)
def runtime():
    op2.init(backend=os.environ.get("OP2RS_TEST_BACKEND", "sequential"))
    yield
