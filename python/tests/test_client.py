"""Tests of the Python client against a real `lookout serve`.

cmd/lookout/python_test.go starts the server on a free port with a new
SQLite database (local mode: no users) and runs these with $LOOKOUT_SERVER
pointing at it and $LOOKOUT_TEST_CORPUS at the shared corpus.
"""

import json
import os
import socket
import sys
import time
import types
import unittest
import urllib.parse
import urllib.request
import uuid

import lookout

SERVER = os.environ.get("LOOKOUT_SERVER", "")
CORPUS = os.environ.get("LOOKOUT_TEST_CORPUS", "")

TRACE = [
    {"role": "user", "content": "What is in my inbox?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {"n": 2}}}]},
    {"role": "tool", "tool_call_id": "1", "content": "1. refund request from Alice"},
    {"role": "assistant", "content": "You have a refund request."},
]


def fresh(name):
    """A dataset name no other test uses."""
    return "%s-%s" % (name, uuid.uuid4().hex[:8])


@unittest.skipUnless(SERVER, "LOOKOUT_SERVER is not set: run through go test ./cmd/lookout -run TestPythonClient")
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = lookout.Client()

    def test_default_server_from_env(self):
        self.assertEqual(self.client.api_url, SERVER.rstrip("/"))
        me = self.client.me()
        self.assertTrue(me["local_mode"])
        self.assertEqual(me["via"], "local")

    def test_push_trace_with_the_sdk_arguments(self):
        # The Invariant SDK always sends a key; a local-mode server takes any
        # key from this machine.
        client = lookout.Client(api_url=SERVER, api_key="inv-key-the-sdk-insists-on")
        ds = fresh("sdk")
        resp = client.create_request_and_push_trace(
            messages=[TRACE, TRACE[:1]],
            annotations=[[{"content": "the refund", "address": "messages.2.content:3-9"}], []],
            metadata=[{"name": "first", "model": "gpt-4o"}, {"name": "second"}],
            dataset=ds,
        )
        self.assertEqual(len(resp.id), 2)
        self.assertEqual(resp.dataset, ds)
        rows = client.export(ds)
        traces = [r for r in rows if "messages" in r]
        self.assertEqual([len(t["messages"]) for t in traces], [4, 1])
        self.assertEqual(traces[0]["metadata"]["model"], "gpt-4o")
        self.assertEqual(traces[0]["annotations"][0]["address"], "messages.2.content:3-9")
        self.assertEqual(traces[0]["annotations"][0]["content"], "the refund")

    def test_push_trace_with_a_request_object(self):
        ds = fresh("req")
        req = lookout.PushTracesRequest(messages=[TRACE], dataset=ds, metadata=[{"reward": 1}])
        self.assertEqual(req.to_json()["annotations"], None)
        resp = self.client.push_trace(req)
        self.assertEqual(len(resp.id), 1)
        self.assertEqual(resp.dataset, ds)
        # Positional, as the SDK's request-less call.
        resp = self.client.push_trace([TRACE[:2]], dataset=ds)
        self.assertEqual(len(resp.id), 1)
        self.assertEqual(self.client.dataset(ds)["trace_count"], 2)

    def test_push_trace_rejects_bad_input_before_sending(self):
        with self.assertRaisesRegex(ValueError, "cannot be empty"):
            self.client.push_trace(messages=[])
        with self.assertRaisesRegex(ValueError, "one dict per trace"):
            self.client.push_trace(messages=[TRACE], metadata=[{}, {}])

    def test_push_traces_in_batches_then_search_and_export(self):
        ds = fresh("batch")
        traces = [TRACE] + [{"messages": [{"role": "user", "content": "trace %d" % i}], "metadata": {"i": i}} for i in range(6)]
        ids = self.client.push(ds, traces, batch=4)
        self.assertEqual(len(ids), 7)
        self.assertEqual(len(set(ids)), 7)
        hits = self.client.search(ds, "refund")
        self.assertEqual([h["index"] for h in hits], [0])
        self.assertEqual(hits[0]["hits"], ["messages.2.content:3-9", "messages.3.content:11-17"])
        self.assertEqual(len(self.client.search(ds, "trace", limit=None)), 6)
        self.assertEqual(len(self.client.search(ds, "trace", limit=2)), 2)
        self.assertEqual(self.client.search(ds, "meta:i>=4 trace", limit=None)[0]["index"], 5)
        rows = self.client.export(ds, format="canonical")
        self.assertEqual([r["index"] for r in rows], list(range(7)))
        self.assertEqual(rows[3]["metadata"], {"i": 2})

    def test_push_a_file_in_any_format(self):
        if not CORPUS:
            self.fail("LOOKOUT_TEST_CORPUS is not set")
        ds = fresh("file")
        ids = self.client.push(ds, os.path.join(CORPUS, "openai/tau-bench/gpt-4o-airline.json"))
        self.assertEqual(len(ids), 200)
        self.assertEqual(self.client.dataset(ds)["trace_count"], 200)
        self.assertIn(ds, [d["name"] for d in self.client.datasets(mine=True)])

    def test_a_rejected_upload_stores_nothing(self):
        ds = fresh("bad")
        path = os.path.join(self._tmpdir(), "bad.jsonl")
        with open(path, "w") as f:
            f.write('[{"role": "user", "content": "ok"}]\n[{"role": "user", "content": 5}]\n')
        with self.assertRaises(lookout.LookoutError) as cm:
            self.client.push(ds, path)
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(self.client.dataset(ds)["trace_count"], 0)

    def test_check(self):
        policy = 'raise "refund mentioned" if:\n    (msg: ToolOutput)\n    "refund" in msg.content\n'
        errors = self.client.check(policy, TRACE)
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["args"], ["refund mentioned"])
        self.assertEqual(self.client.check(policy, TRACE[:2]), [])
        with self.assertRaises(lookout.LookoutError) as cm:
            self.client.check("raise if", TRACE)
        self.assertEqual(cm.exception.status, 422)
        self.assertIn("invalid policy", cm.exception.message)

    def test_unknown_dataset(self):
        with self.assertRaises(lookout.LookoutError) as cm:
            self.client.export(fresh("nope"))
        self.assertEqual(cm.exception.status, 404)

    def test_server_without_scheme(self):
        bare = SERVER.split("://", 1)[1]
        client = lookout.Client(bare)
        self.assertEqual(client.api_url, "http://" + bare.rstrip("/"))
        self.assertTrue(client.me()["local_mode"])

    def test_refused_connection_names_the_server(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        with self.assertRaises(lookout.LookoutError) as cm:
            lookout.Client("127.0.0.1:%d" % port).datasets()
        self.assertIn("is `lookout serve` running at http://127.0.0.1:%d?" % port, str(cm.exception))

    def _tmpdir(self):
        import tempfile
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        return d


@unittest.skipUnless(SERVER, "LOOKOUT_SERVER is not set")
class OpenTelemetryTest(unittest.TestCase):
    OTEL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME")

    def setUp(self):
        saved = {k: os.environ.get(k) for k in self.OTEL_VARS}

        def restore():
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.addCleanup(restore)

    def test_sets_the_exporter_variables_and_they_reach_lookout(self):
        ds = fresh("otel")
        try:
            provider = lookout.configure_opentelemetry(dataset=ds, api_key="lk_any", service_name="agent", set_global=False)
            provider.shutdown()
        except lookout.OpenTelemetryMissing as e:
            # Debian's python3 has no OpenTelemetry SDK: the message says what to install.
            self.assertIn("pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http", str(e))
        endpoint = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        self.assertEqual(endpoint, SERVER.rstrip("/") + "/v1/traces")
        self.assertEqual(os.environ["OTEL_SERVICE_NAME"], "agent")
        headers = dict(urllib.parse.unquote(h).split("=", 1) for h in os.environ["OTEL_EXPORTER_OTLP_TRACES_HEADERS"].split(","))
        self.assertEqual(headers, {"Authorization": "Bearer lk_any", "X-Lookout-Dataset": ds})

        # Export one model-call span as an OTLP/HTTP exporter would with
        # these settings (JSON encoding), and find its trace in the dataset.
        now = time.time_ns()
        span = {"traceId": uuid.uuid4().hex, "spanId": uuid.uuid4().hex[:16], "name": "chat gpt-4o", "kind": 3,
                "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.prompt.0.role", "value": {"stringValue": "user"}},
                    {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "hello from otel"}},
                    {"key": "gen_ai.completion.0.role", "value": {"stringValue": "assistant"}},
                    {"key": "gen_ai.completion.0.content", "value": {"stringValue": "hi"}},
                ]}
        body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                                   "scopeSpans": [{"spans": [span]}]}]}
        req = urllib.request.Request(endpoint, data=json.dumps(body).encode(), method="POST",
                                     headers=dict(headers, **{"Content-Type": "application/json"}))
        with urllib.request.urlopen(req, timeout=30) as resp:
            self.assertEqual(resp.status, 200)
        client = lookout.Client()
        deadline = time.time() + 20
        while True:
            try:
                rows = client.export(ds, format="canonical")
            except lookout.LookoutError:
                rows = []
            if rows and rows[0].get("events"):
                break
            if time.time() > deadline:
                self.fail("the OTLP trace did not show up in dataset %s: %r" % (ds, rows))
            time.sleep(0.2)
        self.assertEqual([e.get("content") for e in rows[0]["events"]], ["hello from otel", "hi"])

    def test_with_an_sdk_present(self):
        # The OpenTelemetry SDK cannot be installed here (no PyPI): stand-in
        # modules with its names record what the helper builds.
        made = {}

        class Exporter:
            def __init__(self, endpoint=None, headers=None):
                made["exporter"] = (endpoint, headers)

        class Processor:
            def __init__(self, exporter):
                made["processor"] = exporter

        class Provider:
            def __init__(self, resource=None):
                made["resource"] = resource
                self.processors = []

            def add_span_processor(self, p):
                self.processors.append(p)

        class Resource:
            @staticmethod
            def create(attrs):
                return attrs

        names = {
            "opentelemetry": {"trace": types.SimpleNamespace(set_tracer_provider=lambda p: made.__setitem__("global", p))},
            "opentelemetry.exporter": {}, "opentelemetry.exporter.otlp": {}, "opentelemetry.exporter.otlp.proto": {},
            "opentelemetry.exporter.otlp.proto.http": {},
            "opentelemetry.exporter.otlp.proto.http.trace_exporter": {"OTLPSpanExporter": Exporter},
            "opentelemetry.sdk": {}, "opentelemetry.sdk.resources": {"Resource": Resource},
            "opentelemetry.sdk.trace": {"TracerProvider": Provider},
            "opentelemetry.sdk.trace.export": {"BatchSpanProcessor": Processor},
        }
        saved = {n: sys.modules.get(n) for n in names}
        for n, attrs in names.items():
            m = types.ModuleType(n)
            m.__dict__.update(attrs)
            sys.modules[n] = m

        def restore():
            for n, m in saved.items():
                if m is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = m
        self.addCleanup(restore)

        provider = lookout.configure_opentelemetry(dataset="agents", api_url="127.0.0.1:9", api_key="lk_k")
        self.assertIs(made["global"], provider)
        self.assertEqual(made["exporter"], ("http://127.0.0.1:9/v1/traces", {"Authorization": "Bearer lk_k", "X-Lookout-Dataset": "agents"}))
        self.assertEqual(made["resource"], {"service.name": "agents"})
        self.assertEqual(len(provider.processors), 1)


if __name__ == "__main__":
    unittest.main()
