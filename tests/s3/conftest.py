"""The S3 tests share one SeaweedFS server per session (started on first use)."""

import pytest

from s3server import seaweed_server


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    with seaweed_server(tmp_path_factory.mktemp("seaweed")) as server:
        yield server
