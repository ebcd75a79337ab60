"""The REST tests share one mock server per session (pypaimon 1.4.1's, started on first use);
each test works in a database of its own."""

import uuid

import pytest

from rest_kit import mock_server


@pytest.fixture(scope="session")
def rest_mock(tmp_path_factory):
    with mock_server(tmp_path_factory.mktemp("rest-mock")) as server:
        yield server


@pytest.fixture
def db():
    """A database name no other test uses."""
    return "d" + uuid.uuid4().hex[:10]
