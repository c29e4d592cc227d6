"""Fixtures: the library (FGEMMA_LIBRARY), the shared fixtures (FGEMMA_SHARED_DIR) and the CLI
(FGEMMA_CLI) come from CTest (bindings/python/CMakeLists.txt) or the environment."""
import json
import os

import pytest

import fgemma

SHARED = os.environ.get("FGEMMA_SHARED_DIR", os.path.join(os.path.dirname(__file__), "../../../../shared"))


def fixture(rel):
    return os.path.join(SHARED, "fixtures", rel)


@pytest.fixture(scope="session")
def model():
    with fgemma.Model.load(fixture("models/mini-bf16")) as m:
        yield m


@pytest.fixture(scope="session")
def tools():
    with open(fixture("chat/smart-home-tools.json")) as f:
        return json.load(f)
