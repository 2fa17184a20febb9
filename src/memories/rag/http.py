"""One POST to a model endpoint, with timeouts, a proxy, retries with backoff and errors that
never echo what was sent or what came back.

Used by the chat generator, the HTTP embedder and the rerank client. A retry happens for
connection failures, timeouts, 429 and 5xx answers; any other answer is final. Every failure
becomes an ``UnavailableError`` (the endpoint cannot be used now) or a ``MemoriesError`` (it
answered something that is not what its protocol promises) naming the host and status only.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from memories.errors import MemoriesError, UnavailableError
from memories.rag.config import Endpoint

__all__ = ["MAX_RESPONSE_BYTES", "post_json"]

log = logging.getLogger(__name__)

#: A longer answer is refused: no model answer or embedding batch is anywhere near this.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def _host(url: str) -> str:
    return urlsplit(url).netloc or "the endpoint"


def post_json(
    endpoint: Endpoint,
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    what: str = "the model endpoint",
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer.

    Args:
        endpoint: timeouts, retries and proxy; its API key (if any) is sent as a bearer token
            unless ``headers`` already carries the credential.
        transport: an httpx transport seam (tests plug a mock transport in).

    Raises:
        UnavailableError: the endpoint cannot be reached, timed out or kept failing.
        MemoriesError: it answered with another error status or with something that is not JSON.
        UsageError: the API key is configured but cannot be read.
    """
    sent: dict[str, str] = {"content-type": "application/json", "accept": "application/json"}
    sent.update(headers or {})
    if not any(h.lower() in ("authorization", "x-goog-api-key") for h in sent):
        key = endpoint.api_key()
        if key is not None:
            sent["authorization"] = f"Bearer {key}"
    host = _host(url)
    attempts = endpoint.retries + 1
    timeout = httpx.Timeout(endpoint.timeout_seconds, connect=min(10.0, endpoint.timeout_seconds))
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    with httpx.Client(
        timeout=timeout,
        proxy=endpoint.proxy,
        transport=transport,
        follow_redirects=False,
        trust_env=False,
    ) as client:
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = client.post(url, content=payload, headers=sent)
            except httpx.TimeoutException as exc:
                if last:
                    raise UnavailableError(
                        f"{what} at {host} did not answer within {endpoint.timeout_seconds:g} "
                        "seconds"
                    ) from exc
            except httpx.HTTPError as exc:
                if last:
                    raise UnavailableError(
                        f"cannot reach {what} at {host} ({type(exc).__name__}); is it running?"
                    ) from exc
            else:
                if response.status_code < 300:
                    return _decode(response, what, host)
                if response.status_code not in _RETRY_STATUSES or last:
                    raise _status_error(response.status_code, what, host)
            # Exponential backoff with jitter, so several clients do not retry in step.
            delay = min(8.0, 0.25 * 2**attempt) * (0.5 + random.random() / 2)
            log.debug("%s at %s failed; retry %d in %.2fs", what, host, attempt + 1, delay)
            sleep(delay)
    raise UnavailableError(f"{what} at {host} kept failing")  # pragma: no cover - loop exits


def _status_error(status: int, what: str, host: str) -> MemoriesError:
    if status in (401, 403):
        return MemoriesError(f"{what} at {host} refused the request (HTTP {status}); check its key")
    if status == 404:
        return MemoriesError(f"{what} at {host} has no such URL or model (HTTP 404)")
    if status in _RETRY_STATUSES:
        return UnavailableError(f"{what} at {host} kept failing (HTTP {status})")
    return MemoriesError(f"{what} at {host} answered HTTP {status}")


def _decode(response: httpx.Response, what: str, host: str) -> Any:
    raw = response.content
    if len(raw) > MAX_RESPONSE_BYTES:
        raise MemoriesError(f"{what} at {host} answered more than 32 MiB")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoriesError(f"{what} at {host} did not answer JSON") from exc
