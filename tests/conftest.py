"""Shared test setup: real model requests are forbidden in the whole suite."""

import pytest

from tether.models import set_model_requests_allowed


@pytest.fixture(autouse=True)
def _forbid_real_model_requests():
    set_model_requests_allowed(False)
    yield
    set_model_requests_allowed(True)
