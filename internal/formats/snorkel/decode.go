// Package snorkel decodes ... (being written).
package snorkel

import (
	"encoding/json"
	"io"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder over r; file names r in errors.
func NewDecoder(r io.Reader, file string) decoding.Decoder { return &decoder{} }

type decoder struct{}

func (d *decoder) Next() (*trace.Trace, error)      { return nil, io.EOF }
func (d *decoder) DatasetMetadata() json.RawMessage { return nil }
