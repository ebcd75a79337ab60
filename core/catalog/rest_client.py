"""HTTP for the Paimon REST catalog: JSON requests with a bearer token, answers and errors.

The standard library's ``urllib`` is enough for the protocol (one JSON request, one JSON
answer, no streaming), so a REST catalog costs lakectl no dependency. What the calls are and
what their answers hold is written down in ``docs/rest-catalog.md``; ``core/catalog/rest.py``
makes the calls.

Every failure becomes one line in lakectl's words with the HTTP status and the server's own
message (an error body is ``{"message", "resourceType", "resourceName", "code"}``; a server may
also answer plain text):

- no answer at all (refused, timed out, DNS): ``CatalogUnreachableError`` (exit 8);
- 401 and 403: ``CatalogAccessError`` (exit 7), the token (or its permissions) refused;
- 404 naming a resource: ``RestNotFound`` (exit 3); 404 naming none, 405 and 501: the server
  lacks the call, ``CatalogUnsupportedError`` (exit 2, naming the spec's operation);
- 409: ``RestAlreadyExists`` (exit 1);
- anything else: ``RestServerError`` (exit 1).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from core.errors import (CatalogAccessError, CatalogUnreachableError, CatalogUnsupportedError, LakectlError,
                         NotFoundError)

DEFAULT_TIMEOUT_SECONDS = 30.0
_MESSAGE_CHARS = 300  # a server's message is quoted up to this length, on one line


class RestError(LakectlError):
    """An error answer of the REST server: its status, and the resource it names if any."""

    status: int = 0
    resource_type: str | None = None
    resource_name: str | None = None


class RestNotFound(RestError, NotFoundError):
    """404 naming a resource (a database, table, snapshot, tag, branch) that does not exist."""


class RestAlreadyExists(RestError):
    """409: the database, table, tag or branch to create exists already."""


class RestServerError(RestError):
    """Any other error status (400, 500, ...)."""


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 3] + "..."


def _parse_error(body: bytes) -> tuple[str, str | None, str | None]:
    """(message, resourceType, resourceName) of an error body, JSON or plain text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return _one_line(text), None, None
    if not isinstance(obj, dict):
        return _one_line(text), None, None
    message = obj.get("message")
    return (_one_line(str(message)) if message else "", obj.get("resourceType") or None,
            None if obj.get("resourceName") is None else str(obj.get("resourceName")))


class RestClient:
    """One REST catalog server: ``uri`` (``http://host:port``), a bearer token, a timeout.

    ``request`` returns the decoded JSON answer (None for an empty 200) or raises one of the
    errors above. ``operation`` names the call (the spec's operationId) for the messages.
    """

    def __init__(self, uri: str, *, token: str | None = None, headers: dict[str, str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.uri = uri.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, *, operation: str, query: dict[str, str] | None = None,
                body: Any = None) -> Any:
        url = self.uri + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            raise self._error(e.code, e.read() if e.fp is not None else b"", method, path, operation) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            raise CatalogUnreachableError(
                f"REST catalog at {self.uri} did not answer {operation} ({_one_line(str(reason)) or 'no reason given'})"
            ) from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise RestServerError(f"REST catalog at {self.uri} answered {operation} with something other than "
                                  f"JSON: {_one_line(raw.decode('utf-8', 'replace'))}") from None

    def _error(self, status: int, body: bytes, method: str, path: str, operation: str) -> RestError | LakectlError:
        message, resource_type, resource_name = _parse_error(body)
        said = f": {message}" if message else ""
        if status in (401, 403):
            what = "refused the token" if status == 401 else "refused access"
            return CatalogAccessError(f"REST catalog at {self.uri} {what} for {operation} (HTTP {status}{said})")
        if status in (405, 501) or (status == 404 and resource_type is None):
            return CatalogUnsupportedError(f"REST catalog at {self.uri} does not implement {operation} "
                                           f"({method} {path}: HTTP {status}{said})")
        cls: type[RestError] = RestNotFound if status == 404 else RestAlreadyExists if status == 409 else RestServerError
        error = cls(f"REST catalog at {self.uri}: {operation} failed (HTTP {status}{said})")
        error.status, error.resource_type, error.resource_name = status, resource_type, resource_name
        return error


def segment(name: str) -> str:
    """A name as one path segment (Paimon's clients encode every character outside
    ``[A-Za-z0-9_.~-]``)."""
    return urllib.parse.quote(name, safe="")
