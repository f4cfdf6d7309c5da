package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
)

// OTLPGRPC returns a gRPC server with the OTLP trace service
// (opentelemetry.proto.collector.trace.v1.TraceService/Export), for
// `lookout serve --otlp-grpc`. It takes spans as POST /v1/traces does: the
// "authorization" metadata ("Bearer <API key>", or none in local mode from
// this machine), the dataset from "x-lookout-dataset" metadata or
// service.name, the same partial success; messages over the body limit are
// refused by gRPC itself (ResourceExhausted).
func (s *Server) OTLPGRPC() *grpc.Server {
	g := grpc.NewServer(grpc.MaxRecvMsgSize(int(min(s.maxBody, 1<<31-1))))
	coltracepb.RegisterTraceServiceServer(g, &traceService{s: s})
	return g
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	s *Server
}

func (ts *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	// The API's authentication reads an HTTP request: give it one with the
	// call's credentials and peer address.
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/traces", http.NoBody)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if a := md.Get("authorization"); len(a) > 0 {
		r.Header.Set("Authorization", a[0])
	}
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		r.RemoteAddr = pr.Addr.String()
	}
	p, err := ts.s.authenticate(r)
	if err == nil {
		err = ts.s.requireUser(r, p)
	}
	if err != nil {
		return nil, grpcError(err)
	}
	dataset := ""
	if d := md.Get(strings.ToLower(datasetHeader)); len(d) > 0 {
		dataset = strings.TrimSpace(d[0])
	}
	spans, err := otlp.FromResourceSpans(req.GetResourceSpans())
	var problems []string
	var oe *otlp.Error
	if errors.As(err, &oe) {
		for _, pr := range oe.Problems {
			problems = append(problems, pr.Error())
		}
	}
	rejected, msg, err := ts.s.ingestSpans(ctx, p, dataset, spans, problems)
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if rejected > 0 || msg != "" {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: int64(rejected), ErrorMessage: msg}
	}
	return resp, nil
}

// grpcError maps an API error to the gRPC status of the same meaning.
func grpcError(err error) error {
	ae := toAPIError(err)
	c := codes.Internal
	switch ae.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
		c = codes.InvalidArgument
	case http.StatusUnauthorized:
		c = codes.Unauthenticated
	case http.StatusForbidden, http.StatusNotFound:
		c = codes.PermissionDenied
	case http.StatusConflict:
		c = codes.Aborted
	case http.StatusRequestEntityTooLarge:
		c = codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		c = codes.Unavailable
	}
	return status.Error(c, ae.Message)
}
