package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
)

// OTLP/gRPC, for `lookout serve --otlp-grpc`: the one unary call
// opentelemetry.proto.collector.trace.v1.TraceService/Export, served by
// net/http over unencrypted HTTP/2 and framed by hand (a gRPC message is a
// compressed flag, a 4-byte length and the protobuf; the status goes in
// trailers). The gRPC library would do the same at the price of about 50
// more package initialisers, paid by every lookout command at start.
//
// Spans are taken as POST /v1/traces takes them: the "authorization" header
// ("Bearer <API key>", or none in local mode from this machine), the dataset
// from "x-lookout-dataset" or service.name, the same partial success.

// exportPath is the method's HTTP/2 path.
const exportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// gRPC status codes used here.
const (
	grpcOK               = 0
	grpcInvalidArgument  = 3
	grpcPermissionDenied = 7
	grpcResourceExhaust  = 8
	grpcAborted          = 10
	grpcUnimplemented    = 12
	grpcInternal         = 13
	grpcUnavailable      = 14
	grpcUnauthenticated  = 16
)

// OTLPGRPC is the handler of the OTLP/gRPC receiver: serve it over
// unencrypted HTTP/2 (http.Protocols.SetUnencryptedHTTP2).
func (s *Server) OTLPGRPC() http.Handler {
	return http.HandlerFunc(s.grpcExport)
}

func (s *Server) grpcExport(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != exportPath {
		grpcStatus(w, grpcUnimplemented, "unknown method "+r.URL.Path+" (this port serves "+exportPath+")")
		return
	}
	if r.Method != http.MethodPost || r.ProtoMajor != 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		http.Error(w, "OTLP/gRPC: send gRPC (HTTP/2 POST, application/grpc)", http.StatusUnsupportedMediaType)
		return
	}
	msg, code, err := readGRPCMessage(r, s.maxBody)
	if err != nil {
		grpcStatus(w, code, err.Error())
		return
	}
	spans, derr := otlp.DecodeTraces(msg)
	var ue *otlp.UnmarshalError
	if errors.As(derr, &ue) {
		grpcStatus(w, grpcInvalidArgument, "not an OTLP ExportTraceServiceRequest: "+ue.Error())
		return
	}
	p, err := s.authenticate(r)
	if err == nil {
		err = s.requireUser(r, p)
	}
	if err != nil {
		grpcStatus(w, grpcCode(err), toAPIError(err).Message)
		return
	}
	var problems []string
	var oe *otlp.Error
	if errors.As(derr, &oe) {
		for _, pr := range oe.Problems {
			problems = append(problems, pr.Error())
		}
	}
	rejected, text, err := s.ingestSpans(r.Context(), p, strings.TrimSpace(r.Header.Get(datasetHeader)), spans, problems)
	if err != nil {
		if ae := toAPIError(err); ae.Status >= 500 {
			s.log.ErrorContext(r.Context(), "OTLP/gRPC export failed", "err", err)
		}
		grpcStatus(w, grpcCode(err), toAPIError(err).Message)
		return
	}
	resp := exportResponse(rejected, text)
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Trailer", "Grpc-Status, Grpc-Message")
	w.WriteHeader(http.StatusOK)
	var frame [5]byte
	binary.BigEndian.PutUint32(frame[1:], uint32(len(resp)))
	w.Write(frame[:])
	w.Write(resp)
	h.Set("Grpc-Status", "0")
	h.Set("Grpc-Message", "")
}

// readGRPCMessage reads the one message of a unary call, inflating it when
// the client compressed it with gzip.
func readGRPCMessage(r *http.Request, limit int64) ([]byte, int, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+6))
	if err != nil {
		return nil, grpcInvalidArgument, fmt.Errorf("reading the request: %v", err)
	}
	if len(body) < 5 {
		return nil, grpcInvalidArgument, errors.New("the request holds no gRPC message")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if int64(n) > limit {
		return nil, grpcResourceExhaust, fmt.Errorf("a message of %d bytes, larger than the limit of %d (lookout serve --max-body)", n, limit)
	}
	if int64(len(body)-5) != int64(n) {
		return nil, grpcInvalidArgument, fmt.Errorf("the request's message is %d bytes, its frame says %d (one message per call)", len(body)-5, n)
	}
	msg := body[5:]
	switch body[0] {
	case 0:
		return msg, grpcOK, nil
	case 1:
		if enc := r.Header.Get("Grpc-Encoding"); enc != "gzip" {
			return nil, grpcUnimplemented, fmt.Errorf("grpc-encoding %q is not supported (gzip or none)", enc)
		}
		out, err := inflate(msg, limit)
		if errors.Is(err, errInflatesTooFar) {
			return nil, grpcResourceExhaust, fmt.Errorf("the gzip message inflates past the limit of %d bytes (lookout serve --max-body)", limit)
		}
		if err != nil {
			return nil, grpcInvalidArgument, fmt.Errorf("the gzip message is broken: %v", err)
		}
		return out, grpcOK, nil
	}
	return nil, grpcInvalidArgument, fmt.Errorf("unknown compressed flag %d", body[0])
}

// exportResponse is an ExportTraceServiceResponse: partial_success (1) with
// rejected_spans (1) and error_message (2), absent when nothing was
// rejected.
func exportResponse(rejected int, msg string) []byte {
	var b bytes.Buffer
	writeOTLPProto(&b, rejected, msg)
	return b.Bytes()
}

// grpcStatus ends a call with an error status (a trailers-only answer).
func grpcStatus(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(code))
	h.Set("Grpc-Message", grpcEscape(msg))
	w.WriteHeader(http.StatusOK)
}

// grpcEscape percent-encodes a status message as gRPC wants it.
func grpcEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// grpcCode maps an API error to the gRPC status of the same meaning.
func grpcCode(err error) int {
	switch toAPIError(err).Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
		return grpcInvalidArgument
	case http.StatusUnauthorized:
		return grpcUnauthenticated
	case http.StatusForbidden, http.StatusNotFound:
		return grpcPermissionDenied
	case http.StatusConflict:
		return grpcAborted
	case http.StatusRequestEntityTooLarge:
		return grpcResourceExhaust
	case http.StatusServiceUnavailable:
		return grpcUnavailable
	}
	return grpcInternal
}
