"""Lookout's Python client: push AI-agent traces to a Lookout server, and
export, search and check them. Standard library only.

    import lookout
    client = lookout.Client()          # $LOOKOUT_SERVER, else http://127.0.0.1:8000
    client.push_trace(messages=[[{"role": "user", "content": "hi"}]], dataset="my-agent")

``push_trace`` takes the Invariant SDK's arguments, so code written for the
SDK's ``Client`` runs against Lookout with this import instead.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, List, Optional, Union

__all__ = [
    "Client",
    "LookoutError",
    "PushTracesRequest",
    "PushTracesResponse",
    "OpenTelemetryMissing",
    "configure_opentelemetry",
    "DEFAULT_SERVER",
]

__version__ = "0.1.0"

DEFAULT_SERVER = "http://127.0.0.1:8000"
_BATCH = 500  # traces per push request, as `lookout push`


class LookoutError(Exception):
    """An error answer of the server ({"error": {"code", "message", "details"}}),
    or a server that cannot be reached (status 0, code "unreachable")."""

    def __init__(self, status: int, code: str, message: str, details: Any = None):
        super().__init__("%s (HTTP %d %s)" % (message, status, code) if status else message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


class PushTracesRequest:
    """The Invariant SDK's push request: one list of events per trace, and
    optionally one list of annotations and one metadata object per trace."""

    def __init__(self, messages: List[List[Dict]], annotations: Optional[List[List[Dict]]] = None,
                 dataset: Optional[str] = None, metadata: Optional[List[Dict]] = None):
        if not messages:
            raise ValueError("messages cannot be empty")
        if not all(isinstance(t, list) and all(isinstance(e, dict) for e in t) for t in messages):
            raise ValueError("messages must be a list of traces, each a list of event dicts")
        if annotations is not None and len(annotations) != len(messages):
            raise ValueError("annotations must have one list per trace (%d traces, %d lists)" % (len(messages), len(annotations)))
        if metadata is not None and len(metadata) != len(messages):
            raise ValueError("metadata must have one dict per trace (%d traces, %d dicts)" % (len(messages), len(metadata)))
        self.messages = messages
        self.annotations = annotations
        self.dataset = dataset
        self.metadata = metadata

    def to_json(self) -> Dict[str, Any]:
        anns = None
        if self.annotations is not None:
            anns = [[_annotation(a) for a in (trace or [])] for trace in self.annotations]
        return {"messages": self.messages, "annotations": anns, "dataset": self.dataset, "metadata": self.metadata}


def _annotation(a: Any) -> Dict[str, Any]:
    # The SDK's AnnotationCreate objects, or plain dicts.
    if hasattr(a, "model_dump"):
        a = a.model_dump()
    elif not isinstance(a, dict):
        a = {"content": getattr(a, "content"), "address": getattr(a, "address"),
             "extra_metadata": getattr(a, "extra_metadata", None)}
    return {k: v for k, v in a.items() if v is not None}


class PushTracesResponse:
    """The ids of the stored traces, in order, and the dataset they went to."""

    def __init__(self, id: List[str], dataset: Optional[str] = None, username: Optional[str] = None):
        self.id = id
        self.dataset = dataset
        self.username = username

    def __repr__(self) -> str:
        return "PushTracesResponse(id=%r, dataset=%r)" % (self.id, self.dataset)


def _server_url(url: Optional[str]) -> str:
    url = (url or os.environ.get("LOOKOUT_SERVER") or DEFAULT_SERVER).strip()
    if "://" not in url:
        url = "http://" + url  # 127.0.0.1:8000 means http, as for the CLI
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("server URL %r: want http://host:port or https://host" % url)
    return url.rstrip("/")


class Client:
    """A client of one Lookout server.

    api_url: the server (default $LOOKOUT_SERVER, else http://127.0.0.1:8000;
    http:// is assumed without a scheme). api_key: sent as a Bearer key
    (default $LOOKOUT_API_KEY; a local-mode server needs none, and accepts any
    from this machine). timeout_ms: per request, as in the Invariant SDK (an
    int, or a (connect, read) pair of which the larger is used).
    """

    def __init__(self, api_url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout_ms: Union[int, tuple, None] = None):
        self.api_url = _server_url(api_url)
        key = api_key if api_key is not None else os.environ.get("LOOKOUT_API_KEY", "")
        self.api_key = key.strip() or None
        if isinstance(timeout_ms, tuple):
            timeout_ms = max(timeout_ms)
        self.timeout = (timeout_ms or 60_000) / 1000

    def __repr__(self) -> str:
        return "lookout.Client(%r)" % self.api_url

    # -- HTTP ----------------------------------------------------------------

    def _open(self, method: str, path: str, query: Optional[Dict[str, Any]] = None, body: Optional[bytes] = None,
              content_type: Optional[str] = None, accept: str = "application/json"):
        url = self.api_url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        req = urllib.request.Request(url, data=body, method=method)
        req.add_header("Accept", accept)
        req.add_header("User-Agent", "lookout-python/" + __version__)
        if content_type:
            req.add_header("Content-Type", content_type)
        if self.api_key:
            req.add_header("Authorization", "Bearer " + self.api_key)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise _api_error(e.code, e.read(), method, path) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                raise LookoutError(0, "unreachable", "cannot connect to %s: is `lookout serve` running at %s?"
                                   % (urllib.parse.urlsplit(self.api_url).netloc, self.api_url)) from e
            raise LookoutError(0, "unreachable", "%s %s: %s" % (method, url, e.reason)) from e

    def _json(self, method: str, path: str, query: Optional[Dict[str, Any]] = None, payload: Any = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        with self._open(method, path, query, body, "application/json" if body is not None else None) as resp:
            data = resp.read()
        return json.loads(data) if data else None

    # -- pushing -------------------------------------------------------------

    def push_trace(self, request: Union[PushTracesRequest, Dict, List, None] = None, annotations: Optional[List] = None,
                   metadata: Optional[List[Dict]] = None, dataset: Optional[str] = None, *,
                   messages: Optional[List[List[Dict]]] = None, request_kwargs: Any = None) -> PushTracesResponse:
        """Push traces as the Invariant SDK does: ``push_trace(request)`` with a
        PushTracesRequest (this module's or the SDK's), or the arguments of the
        SDK's ``create_request_and_push_trace(messages, annotations, metadata,
        dataset)``. The dataset is created (private) on first push. All the
        traces are stored in one transaction, or none."""
        if request is not None and messages is not None:
            raise TypeError("give the messages once: as the first argument or as messages=")
        if isinstance(request, list) or request is None:
            request = PushTracesRequest(messages=request if request is not None else messages,
                                        annotations=annotations, dataset=dataset, metadata=metadata)
        payload = request if isinstance(request, dict) else request.to_json()
        out = self._json("POST", "/api/v1/push/trace", payload=payload)
        return PushTracesResponse(out.get("id", []), out.get("dataset"), out.get("username"))

    def create_request_and_push_trace(self, messages: List[List[Dict]], annotations: Optional[List[List[Dict]]] = None,
                                      metadata: Optional[List[Dict]] = None, dataset: Optional[str] = None,
                                      request_kwargs: Any = None) -> PushTracesResponse:
        """The Invariant SDK's name for push_trace with its arguments."""
        return self.push_trace(messages=messages, annotations=annotations, metadata=metadata, dataset=dataset)

    def push(self, dataset: str, traces: Union[str, "os.PathLike[str]", Iterable[Any]], *, format: str = "auto",
             skip_invalid: bool = False, batch: int = _BATCH) -> List[str]:
        """Store traces in the dataset (created on first push); returns their ids.

        traces is a file path, in any format Lookout reads (uploaded whole:
        all or nothing unless skip_invalid), or an iterable of traces, each a
        list of events or a dict {"messages", "metadata"?, "annotations"?}
        (pushed in batches of `batch`, each stored whole)."""
        if isinstance(traces, (str, os.PathLike)):
            return self._upload(dataset, os.fspath(traces), format, skip_invalid)
        ids: List[str] = []
        msgs: List[List[Dict]] = []
        metas: List[Dict] = []
        anns: List[List[Dict]] = []

        def flush():
            if msgs:
                ids.extend(self.push_trace(msgs, anns, metas, dataset).id)
                msgs.clear(), metas.clear(), anns.clear()

        for t in traces:
            if isinstance(t, dict):
                msgs.append(t["messages"])
                metas.append(t.get("metadata") or {})
                anns.append(t.get("annotations") or [])
            else:
                msgs.append(list(t))
                metas.append({})
                anns.append([])
            if len(msgs) >= batch:
                flush()
        flush()
        return ids

    def _upload(self, dataset: str, path: str, format: str, skip_invalid: bool) -> List[str]:
        d = self._dataset_or_create(dataset)
        with open(path, "rb") as f:
            body = f.read()
        q = {"filename": os.path.basename(path), "format": format,
             "mode": "skip-invalid" if skip_invalid else "all-or-nothing"}
        with self._open("POST", "/api/v1/datasets/%s/upload" % _q(d["id"]), q, body, "application/octet-stream") as resp:
            out = json.loads(resp.read())
        return out["ids"]

    # -- reading -------------------------------------------------------------

    def datasets(self, mine: bool = False) -> List[Dict]:
        """Your datasets and every public one (only yours with mine=True)."""
        return self._json("GET", "/api/v1/datasets", {"mine": "true" if mine else None})["datasets"]

    def dataset(self, name: str) -> Dict:
        """A dataset by name: yours, else the one public dataset of that name."""
        ds = self._json("GET", "/api/v1/datasets", {"name": name, "mine": "true"})["datasets"]
        if not ds:
            ds = self._json("GET", "/api/v1/datasets", {"name": name})["datasets"]
        if not ds:
            raise LookoutError(404, "not_found", "no dataset named %r" % name)
        if len(ds) > 1:
            raise LookoutError(409, "conflict", "%d public datasets are named %r" % (len(ds), name))
        return ds[0]

    def _dataset_or_create(self, name: str) -> Dict:
        try:
            return self.dataset(name)
        except LookoutError as e:
            if e.status != 404:
                raise
        try:
            return self._json("POST", "/api/v1/datasets", payload={"name": name})
        except LookoutError as e:
            if e.status == 409:  # made meanwhile
                return self.dataset(name)
            raise

    def export(self, dataset: str, format: str = "invariant") -> List[Dict]:
        """The dataset as a list of JSON objects: with format "invariant", the
        dataset metadata line {"metadata": {...}} first (when it has any), then
        one {"messages", "metadata", "annotations"} object per trace in index
        order; with "canonical", Lookout's canonical traces."""
        d = self.dataset(dataset)
        with self._open("GET", "/api/v1/datasets/%s/export" % _q(d["id"]), {"format": format},
                        accept="application/x-ndjson, application/json") as resp:
            return [json.loads(line) for line in resp.read().decode("utf-8").splitlines() if line.strip()]

    def search(self, dataset: str, query: str, limit: Optional[int] = 50) -> List[Dict]:
        """The traces of the dataset that the query (Lookout's search language)
        matches, in index order, each {"index", "id", "hits", ...}; at most
        limit of them (None: all)."""
        d = self.dataset(dataset)
        found: List[Dict] = []
        cursor = None
        while limit is None or len(found) < limit:
            page = 1000 if limit is None else min(1000, limit - len(found))
            out = self._json("GET", "/api/v1/datasets/%s/search" % _q(d["id"]), {"q": query, "limit": page, "cursor": cursor})
            found.extend(out.get("traces") or [])
            cursor = out.get("next")
            if not cursor:
                break
        return found

    def check(self, policy: str, messages: List[Dict], parameters: Optional[Dict] = None) -> List[Dict]:
        """Check one trace (a list of events) against a policy in the
        Invariant policy language; returns the violations, each {"key",
        "args", "kwargs", "ranges"} (empty when none). A policy that does not
        load raises LookoutError 422 with its line and column."""
        payload: Dict[str, Any] = {"policy": policy, "messages": messages}
        if parameters is not None:
            payload["parameters"] = parameters
        return self._json("POST", "/api/v1/policy/check", payload=payload).get("errors") or []

    def me(self) -> Dict:
        """Who the server takes this client for: {"user", "via", "local_mode"}."""
        return self._json("GET", "/api/v1/me")


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _api_error(status: int, body: bytes, method: str, path: str) -> LookoutError:
    try:
        e = json.loads(body)["error"]
        return LookoutError(status, e.get("code", "http"), e.get("message", ""), e.get("details"))
    except (ValueError, KeyError, TypeError):
        return LookoutError(status, "http", "%s %s: HTTP %d: %s" % (method, path, status, body[:200].decode("utf-8", "replace")))


# -- OpenTelemetry ---------------------------------------------------------


class OpenTelemetryMissing(ImportError):
    """The OpenTelemetry SDK or its OTLP/HTTP exporter is not installed."""


def configure_opentelemetry(dataset: Optional[str] = None, api_url: Optional[str] = None, api_key: Optional[str] = None,
                            service_name: Optional[str] = None, set_global: bool = True):
    """Send this process's OpenTelemetry traces to Lookout, in one call.

    Sets the standard exporter variables (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    to the server's /v1/traces, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, and
    OTEL_EXPORTER_OTLP_TRACES_HEADERS with the key and the dataset as
    X-Lookout-Dataset) for exporters that instrumentation libraries make
    later, and OTEL_SERVICE_NAME when service_name is given. Then, with the
    OpenTelemetry SDK and its OTLP/HTTP exporter installed (pip install
    opentelemetry-sdk opentelemetry-exporter-otlp-proto-http), makes a
    TracerProvider that batches spans to Lookout, sets it as the global one
    (unless set_global=False) and returns it; without them, raises
    OpenTelemetryMissing saying what to install (the variables are set all
    the same).
    """
    server = _server_url(api_url)
    key = api_key if api_key is not None else os.environ.get("LOOKOUT_API_KEY", "")
    headers: Dict[str, str] = {}
    if key.strip():
        headers["Authorization"] = "Bearer " + key.strip()
    if dataset:
        headers["X-Lookout-Dataset"] = dataset
    endpoint = server + "/v1/traces"
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = endpoint
    os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    # The variable's values are URL-encoded (the OTLP exporter spec).
    os.environ["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = ",".join(
        "%s=%s" % (k, urllib.parse.quote(v, safe="")) for k, v in headers.items())
    if service_name:
        os.environ["OTEL_SERVICE_NAME"] = service_name
    try:
        from opentelemetry import trace as otel_trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise OpenTelemetryMissing(
            "the OpenTelemetry SDK is not installed (%s): pip install opentelemetry-sdk "
            "opentelemetry-exporter-otlp-proto-http, or let your instrumentation library make its exporter: "
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=%s and OTEL_EXPORTER_OTLP_TRACES_HEADERS are set" % (e, endpoint)) from e
    resource = Resource.create({"service.name": service_name or dataset or "lookout-agent"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, headers=headers)))
    if set_global:
        otel_trace.set_tracer_provider(provider)
    return provider
