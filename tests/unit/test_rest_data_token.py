"""How a REST catalog's data token becomes s3fs options (core/catalog/rest.py): the key names
Paimon's S3 file IOs accept, over lakectl's own S3 settings. End to end against an S3 server:
tests/s3/test_s3_rest_data_token.py."""

from __future__ import annotations

from core.catalog.rest import s3_token_settings, token_storage_options
from core.fileio import s3_options


def test_paimons_names_come_first_then_the_hadoop_spellings():
    token = {"fs.s3.accessKeyId": "AK", "s3.access-key": "other", "fs.s3a.secret.key": "SK",
             "s3a.session-token": "ST", "fs.s3a.endpoint": "minio:9000", "fs.s3a.endpoint.region": "eu-west-1",
             "s3.path.style.access": "TRUE", "fs.oss.accessKeyId": "ignored"}
    assert s3_token_settings(token) == {"key": "AK", "secret": "SK", "token": "ST", "endpoint": "minio:9000",
                                        "region": "eu-west-1", "path_style": "TRUE"}
    assert s3_token_settings({"fs.oss.accessKeyId": "x", "fs.s3.accessKeyId": ""}) == {}


def test_the_token_goes_over_the_configured_settings_and_replaces_their_credentials():
    configured = s3_options(endpoint="http://old:1", region="us-east-1", access_key_id="cfg", secret_access_key="cfg",
                            session_token="cfg-session", connect_timeout=7.0, retries=4)
    out = token_storage_options(configured, {"key": "AK", "secret": "SK", "endpoint": "minio:9000",
                                             "path_style": "true"})
    assert (out["key"], out["secret"], "token" in out) == ("AK", "SK", False)  # no stale session token
    assert out["client_kwargs"] == {"endpoint_url": "https://minio:9000", "region_name": "us-east-1"}
    assert out["config_kwargs"] == {"connect_timeout": 7.0, "retries": {"total_max_attempts": 5},
                                    "s3": {"addressing_style": "path"}}
    # path style off is virtual-host addressing; a token without credentials keeps the configured ones
    out = token_storage_options(configured, {"region": "eu-west-1", "path_style": "false"})
    assert (out["key"], out["token"], out["client_kwargs"]["region_name"]) == ("cfg", "cfg-session", "eu-west-1")
    assert out["config_kwargs"]["s3"] == {"addressing_style": "virtual"}
