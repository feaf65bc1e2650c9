import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_policy():
    """Each test starts and ends with the float32 policy."""
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


def pytest_collection_modifyitems(config, items):
    if keras.backend.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(reason="TensorFlow backend only")
    for item in items:
        if "tf_only" in item.keywords:
            item.add_marker(skip)
