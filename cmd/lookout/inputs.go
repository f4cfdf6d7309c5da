package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// input is one FILE argument opened for decoding; "-" is standard input.
type input struct {
	name   string
	closer io.Closer
	dec    decoding.Decoder
	format formats.Format
}

// openInput opens name and picks its decoder. The error is a
// *decoding.Unsupported for inputs in no readable format, a
// *decoding.Error for JSON cut before its format shows, or an I/O error.
func openInput(name string, stdin io.Reader, f formats.Format) (*input, error) {
	return openWrapped(name, stdin, f, nil)
}

// openWrapped is openInput reading through wrap (nil: as is).
func openWrapped(name string, stdin io.Reader, f formats.Format, wrap func(io.Reader) io.Reader) (*input, error) {
	var r io.Reader = stdin
	var closer io.Closer = io.NopCloser(nil)
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		if fi, err := fh.Stat(); err == nil && fi.IsDir() {
			fh.Close()
			return nil, fmt.Errorf("%s is a directory: give the trace files in it (such as %s)", name, filepath.Join(name, "*.jsonl"))
		}
		r, closer = fh, fh
	}
	if wrap != nil {
		r = wrap(r)
	}
	dec, got, err := formats.Open(r, name, f)
	if err != nil {
		closer.Close()
		return nil, err
	}
	return &input{name: name, closer: closer, dec: dec, format: got}, nil
}

// each calls fn for every trace of in, and onErr for every decoding error.
// Rejected traces (recoverable errors) are reported and skipped; an error
// that stops the input ends the loop.
func (in *input) each(fn func(*trace.Trace) error, onErr func(error)) error {
	defer in.closer.Close()
	for {
		t, err := in.dec.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			onErr(err)
			var de *decoding.Error
			if errors.As(err, &de) && de.Recoverable {
				continue
			}
			return nil
		}
		if err := fn(t); err != nil {
			return err
		}
	}
}

func formatFlagHelp() string {
	return fmt.Sprintf("input format: auto, %s, %s, %s, %s or %s", formats.Invariant, formats.Snorkel, formats.MLflow, formats.Bedrock, formats.OTel)
}

// badInput tells an input that was read but is not traces Lookout can take
// (no known format, or JSON that ends or breaks before its format shows)
// from one that could not be read at all.
func badInput(err error) bool {
	var u *decoding.Unsupported
	var de *decoding.Error
	return errors.As(err, &u) || errors.As(err, &de)
}
