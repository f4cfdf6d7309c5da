package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// OpenTelemetry (this file): the OTLP/HTTP trace receiver.
//
//	POST /v1/traces   an ExportTraceServiceRequest as application/x-protobuf
//	                  or application/json (ids in hex), gzip or not →
//	                  an ExportTraceServiceResponse in the same encoding
//
// Spans go to the dataset named by the x-lookout-dataset header, else by
// their resource's service.name; it is created (private) on first use. The
// spans of one trace may come in any order over any number of requests:
// a request stores them and marks their trace pending, and the trace is
// built from every span received so far once they stop coming (spans.go,
// store.SpanTraces). Spans that cannot be taken (wrong ids, no dataset, a
// trace whose spans break a rule) are answered as a partial success, the
// others stored; a request none of whose spans can be taken is 400 and
// stores nothing.

// datasetHeader names the dataset of a request's spans.
const datasetHeader = "X-Lookout-Dataset"

// otlpTraces receives spans over OTLP/HTTP.
func (s *Server) otlpTraces(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	asJSON := false
	switch mt {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		asJSON = true
	default:
		return errorf(http.StatusUnsupportedMediaType, codeUnsupported,
			"Content-Type must be application/x-protobuf or application/json (OTLP/HTTP), not %q", r.Header.Get("Content-Type"))
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		if body, err = gunzip(body, s.maxBody); err != nil {
			return err
		}
	default:
		return errorf(http.StatusUnsupportedMediaType, codeUnsupported, "Content-Encoding must be gzip or none, not %q", enc)
	}

	var spans []otlp.Span
	var problems []string
	if asJSON {
		spans, err = otlp.ParseJSON(body)
	} else {
		spans, err = otlp.DecodeTraces(body)
		if ue := (*otlp.UnmarshalError)(nil); errors.As(err, &ue) {
			return errorf(http.StatusBadRequest, codeBadRequest, "the body is not an OTLP ExportTraceServiceRequest in protobuf: %v", ue)
		}
	}
	var oe *otlp.Error
	switch {
	case errors.As(err, &oe):
		for _, pr := range oe.Problems {
			problems = append(problems, pr.Error())
		}
	case err != nil:
		return jsonError(body, err) // with its line, column and path
	}

	rejected, msg, err := s.ingestSpans(r.Context(), p, strings.TrimSpace(r.Header.Get(datasetHeader)), spans, problems)
	if err != nil {
		return err
	}
	return writeOTLPResponse(w, asJSON, rejected, msg)
}

// The buffers mapped spans are encoded into (ingestSpans).
const (
	arenaChunk = 256 << 10
	arenaRoom  = 16 << 10
)

// ingestSpans stores spans received over OTLP (HTTP or gRPC) in the
// datasets they name (dataset, else each span's service.name) and returns
// how many spans were rejected, counting problems (one per span already
// left out), with a message listing why. A request none of whose spans can
// be taken is an error (400) and stores nothing. The spans' traces are
// built later (spanBuilder), once their spans stop coming; what would stop
// a trace from being built is checked here, on the request's spans.
func (s *Server) ingestSpans(ctx context.Context, p *principal, dataset string, spans []otlp.Span, problems []string) (int, string, error) {
	if n := s.builder.backlog.Load(); n > s.spanBacklog {
		return 0, "", &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, RetryAfter: 1,
			Message: fmt.Sprintf("%d traces wait to be built from their spans; send again later", n)}
	}
	if err := s.monitor.admit(); err != nil {
		return 0, "", err
	}
	// Group by dataset, then by trace, in order of arrival.
	type groupKey struct{ dataset, trace string }
	var datasets []string
	groups := map[string][][]*otlp.Span{}
	at := map[groupKey]int{}
	for i := range spans {
		sp := &spans[i]
		name := dataset
		if name == "" {
			name = serviceName(sp.Resource)
		}
		if name == "" {
			problems = append(problems, fmt.Sprintf("span %s of trace %s: no dataset: send the %s header or set the service.name resource attribute", sp.SpanID, sp.TraceID, datasetHeader))
			continue
		}
		if err := validName("dataset name", name); err != nil {
			problems = append(problems, fmt.Sprintf("span %s of trace %s: %v", sp.SpanID, sp.TraceID, err))
			continue
		}
		if _, ok := groups[name]; !ok {
			datasets = append(datasets, name)
		}
		k := groupKey{name, sp.TraceID}
		g, ok := at[k]
		if !ok {
			g = len(groups[name])
			at[k] = g
			groups[name] = append(groups[name], nil)
		}
		groups[name][g] = append(groups[name][g], sp)
	}
	// A trace whose spans could not be built is left out whole. Each span
	// is mapped here, once, and stored mapped: a build assembles the trace
	// of its spans without mapping any again.
	rejected := len(problems) // one per span left out so far
	stored := map[string][]store.SpanGroup{}
	// The mapped spans are encoded one after another into buffers of
	// arenaChunk bytes (a span's own growing buffer was an allocation each
	// step of its growth, and one buffer for the request copied its spans
	// again at each doubling: 1.8% of the CPU under bench/peers' load); a
	// span starts a new buffer when less than arenaRoom is left, and one
	// larger than that grows its buffer. Each keeps its part, capped, so
	// earlier parts stay valid when a buffer moves.
	var arena []byte
	for _, name := range datasets {
		for _, g := range groups[name] {
			ms, err := mapSpanGroup(g)
			if err != nil {
				rejected += len(g)
				problems = append(problems, fmt.Sprintf("trace %s (%d spans): %v", g[0].TraceID, len(g), err))
				continue
			}
			sg := store.SpanGroup{OTelTraceID: g[0].TraceID, Spans: make([]store.StoredSpan, len(ms))}
			for i, m := range ms {
				if cap(arena)-len(arena) < arenaRoom {
					arena = make([]byte, 0, arenaChunk)
				}
				at := len(arena)
				arena = m.AppendBinary(arena)
				sg.Spans[i] = store.StoredSpan{SpanID: m.SpanID(), Data: arena[at:len(arena):len(arena)]}
			}
			stored[name] = append(stored[name], sg)
		}
	}
	if len(stored) == 0 {
		if len(problems) == 0 {
			return 0, "", nil
		}
		return 0, "", &apiError{Status: http.StatusBadRequest, Code: codeBadRequest,
			Message: fmt.Sprintf("no span could be taken, nothing stored: %s", strings.Join(first(problems, 5), "; ")),
			Details: map[string]any{"errors": problems}}
	}
	// One transaction per dataset: should a later one fail, the client's
	// retry sends the spans again, which replace those stored (by span id).
	for _, name := range datasets {
		gs := stored[name]
		if len(gs) == 0 {
			continue
		}
		d, err := s.datasetForPush(ctx, p, name)
		if err != nil {
			return 0, "", err
		}
		if _, err := s.st.AcceptSpans(ctx, p.User.ID, d.ID, gs); err != nil {
			return 0, "", err
		}
	}
	s.StartSpanBuilder()
	msg := ""
	if len(problems) > 0 {
		msg = strings.Join(first(problems, 20), "; ")
	}
	return rejected, msg, nil
}

// mapSpanGroup maps the spans of one trace in a request, each on its own
// (a span id sent twice counts once: the last), failing for what would
// stop the trace from being built.
func mapSpanGroup(g []*otlp.Span) ([]*otlp.Mapped, error) {
	last := make(map[string]int, len(g))
	for i, sp := range g {
		last[sp.SpanID] = i
	}
	spans := make([]otlp.Span, 0, len(last))
	for i, sp := range g {
		if last[sp.SpanID] == i {
			spans = append(spans, *sp)
		}
	}
	return otlp.MapSpans(spans)
}

// buildSpanTrace assembles the trace of the spans of one trace received so
// far, mapped when received (those an earlier Lookout stored unmapped are
// mapped now); the trace's metadata names its OpenTelemetry trace id, to
// find it by.
func buildSpanTrace(otelTraceID string, data [][]byte) (*trace.Trace, error) {
	ms := make([]*otlp.Mapped, len(data))
	for i, d := range data {
		var err error
		if ms[i], err = otlp.DecodeMapped(d); err != nil {
			return nil, fmt.Errorf("stored span %d of trace %s: %w", i, otelTraceID, err)
		}
	}
	t, err := otlp.AssembleTrace(ms)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if len(t.Metadata) > 0 {
		if err := json.Unmarshal(t.Metadata, &meta); err != nil {
			return nil, fmt.Errorf("trace %s: metadata: %w", otelTraceID, err)
		}
	}
	meta["otel_trace_id"] = otelTraceID
	if t.Metadata, err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return t, nil
}

// serviceName is the service.name resource attribute, or "".
func serviceName(res []otlp.Attr) string {
	for _, a := range res {
		if a.Key == "service.name" {
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				return strings.TrimSpace(s)
			}
		}
	}
	return ""
}

func first(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], fmt.Sprintf("and %d more", len(xs)-n))
	}
	return xs
}

// gunzip inflates a gzip body, at most limit bytes of it.
func gunzip(body []byte, limit int64) ([]byte, error) {
	out, err := inflate(body, limit)
	switch {
	case errors.Is(err, errInflatesTooFar):
		return nil, tooLargeError(limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, codeBadRequest, "Content-Encoding is gzip but the body is not: %v", err)
	}
	return out, nil
}

// errInflatesTooFar is gzip that inflates past the limit.
var errInflatesTooFar = errors.New("inflates past the limit")

// inflate reads gzip data, at most limit bytes of it.
func inflate(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errInflatesTooFar
	}
	return out, nil
}

// writeOTLPResponse answers an ExportTraceServiceResponse: its
// partial_success (field 1) holds rejected_spans (1) and error_message (2)
// when spans were rejected or there is a message, and is absent otherwise.
func writeOTLPResponse(w http.ResponseWriter, asJSON bool, rejected int, msg string) error {
	if asJSON {
		body := []byte("{}")
		if rejected > 0 || msg != "" {
			ps := map[string]any{"rejectedSpans": strconv.Itoa(rejected)}
			if msg != "" {
				ps["errorMessage"] = msg
			}
			body, _ = json.Marshal(map[string]any{"partialSuccess": ps})
		}
		writeRaw(w, http.StatusOK, body)
		return nil
	}
	var b bytes.Buffer
	writeOTLPProto(&b, rejected, msg)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
	return nil
}

// writeOTLPProto writes an ExportTraceServiceResponse in protobuf.
func writeOTLPProto(b *bytes.Buffer, rejected int, msg string) {
	if rejected == 0 && msg == "" {
		return
	}
	var ps []byte
	if rejected > 0 {
		ps = protowire.AppendTag(ps, 1, protowire.VarintType)
		ps = protowire.AppendVarint(ps, uint64(rejected))
	}
	if msg != "" {
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
	}
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, ps)
	b.Write(out)
}

// spanStore is what the OTLP receiver asks of the store (building traces is the span builder's, spans.go).
type spanStore interface {
	AcceptSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup) (ids []string, err error)
}
