package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// export streams a dataset as JSON lines: ?format=invariant (default) is an
// Invariant JSONL file — the dataset metadata line {"metadata": {...}} first,
// then one {"messages", "metadata", "annotations"} per trace, by index — that
// Invariant's Explorer and Lookout's importers read back; ?format=canonical
// writes canonical traces instead.
func (s *Server) export(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.readableDataset(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.settleDataset(r.Context(), d.ID); err != nil {
		return err
	}
	format := orDefault(r.URL.Query().Get("format"), "invariant")
	if format != "invariant" && format != "canonical" {
		return errorf(http.StatusBadRequest, codeBadRequest, "format must be invariant or canonical, not %q", format)
	}
	ctx := r.Context()
	// Read the first page before answering, so that a failing store is still
	// a proper error response.
	page, next, err := s.st.ListTraces(ctx, d.ID, store.Page{Limit: maxPage})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", attachment(d.Name+".jsonl"))
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 256<<10)
	var enc interface {
		WriteDatasetMetadata([]byte) error
		Encode(*trace.Trace) error
		Flush() error
	}
	if format == "invariant" {
		enc = invariantEncoder{invariant.NewEncoder(bw)}
	} else {
		enc = &canonicalEncoder{w: bw}
	}
	fail := func(err error) error {
		// The status is sent: cut the response off so the client sees an
		// incomplete body rather than a short but well-formed file.
		s.log.ErrorContext(ctx, "export failed", slog.String("dataset", d.ID), slog.Any("err", err))
		panic(http.ErrAbortHandler)
	}
	if meta := d.Metadata; len(meta) > 0 && string(meta) != "{}" {
		if err := enc.WriteDatasetMetadata(meta); err != nil {
			return fail(err)
		}
	}
	for {
		for _, sum := range page {
			st, err := s.st.Trace(ctx, sum.ID)
			if err != nil {
				return fail(err)
			}
			anns, err := s.st.ListAnnotations(ctx, sum.ID)
			if err != nil {
				return fail(err)
			}
			if err := enc.Encode(fullTrace(st, anns)); err != nil {
				return fail(err)
			}
		}
		if next == "" {
			break
		}
		if page, next, err = s.st.ListTraces(ctx, d.ID, store.Page{Cursor: next, Limit: maxPage}); err != nil {
			return fail(err)
		}
	}
	if err := enc.Flush(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	return nil
}

type invariantEncoder struct{ *invariant.Encoder }

func (e invariantEncoder) WriteDatasetMetadata(meta []byte) error {
	return e.Encoder.WriteDatasetMetadata(meta)
}

type canonicalEncoder struct {
	w   *bufio.Writer
	buf []byte
}

func (c *canonicalEncoder) WriteDatasetMetadata(meta []byte) error {
	c.buf = append(append(append(c.buf[:0], `{"metadata":`...), meta...), "}\n"...)
	_, err := c.w.Write(c.buf)
	return err
}

func (c *canonicalEncoder) Encode(t *trace.Trace) error {
	c.buf = append(trace.AppendTrace(c.buf[:0], t), '\n')
	_, err := c.w.Write(c.buf)
	return err
}

func (c *canonicalEncoder) Flush() error { return nil }

// safeFileName keeps a dataset name usable as a file name.
func safeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '"' || r < 0x20 {
			return '_'
		}
		return r
	}, name)
}

// attachment is a Content-Disposition for a download named name (RFC 6266):
// an ASCII filename for old clients and the exact name, percent-encoded in
// UTF-8, as filename*.
func attachment(name string) string {
	name = safeFileName(name)
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '%' {
			return '_'
		}
		return r
	}, name)
	var enc strings.Builder
	for _, b := range []byte(name) {
		// attr-char of RFC 5987; everything else is percent-encoded.
		if b < 0x80 && (b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$&+-.^_`|~", b) >= 0) {
			enc.WriteByte(b)
		} else {
			fmt.Fprintf(&enc, "%%%02X", b)
		}
	}
	return `attachment; filename="` + ascii + `"; filename*=UTF-8''` + enc.String()
}

// exportStore is what exporting a dataset asks of the store.
type exportStore interface {
	ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error)
	ListTraces(ctx context.Context, datasetID string, page store.Page) (items []store.TraceSummary, next string, err error)
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}
