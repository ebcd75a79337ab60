"""The S3 tests share one SeaweedFS server per session (started on first use). It requires
the fixture's credentials, so every test proves that lakectl signs with the ones configured."""

import pytest

from s3server import seaweed_server


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    with seaweed_server(tmp_path_factory.mktemp("seaweed"), require_auth=True) as server:
        yield server
