package otlp

import (
	"fmt"
	"strings"
	"testing"
)

// TestCheckTrace: CheckTrace fails exactly where MapTrace fails, with the
// same problem, so a receiver that checks spans now and maps them later
// answers for them truthfully.
func TestCheckTrace(t *testing.T) {
	const tid = "5b8efff798038103d269b633813fc60c"
	span := func(id, parent, extra string) string {
		return fmt.Sprintf(`{"traceId": %q, "spanId": %q, "parentSpanId": %q, "name": "s"%s}`, tid, id, parent, extra)
	}
	cases := []struct {
		name  string
		spans []string
		want  string // "" when it maps
	}{
		{"a tree", []string{span("0000000000000001", "", ""), span("0000000000000002", "0000000000000001", "")}, ""},
		{"a missing parent", []string{span("0000000000000002", "00000000000000ff", "")}, ""},
		{"a loop", []string{span("0000000000000001", "0000000000000002", ""), span("0000000000000002", "0000000000000001", "")}, "loops"},
		{"its own parent", []string{span("0000000000000001", "0000000000000001", "")}, "loops"},
		{"ends before it starts", []string{span("0000000000000001", "", `, "startTimeUnixNano": "2000", "endTimeUnixNano": "1000"`)}, "before it starts"},
		{"an id used twice", []string{span("0000000000000001", "", ""), span("0000000000000001", "", "")}, "used twice"},
	}
	for _, c := range cases {
		body := `{"resourceSpans": [{"scopeSpans": [{"spans": [` + strings.Join(c.spans, ",") + `]}]}]}`
		spans, err := ParseJSON([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checked := CheckTrace(spans)
		_, mapped := MapTrace(spans)
		if fmt.Sprint(checked) != fmt.Sprint(mapped) {
			t.Errorf("%s: CheckTrace %v, MapTrace %v", c.name, checked, mapped)
		}
		if c.want == "" && checked != nil || c.want != "" && (checked == nil || !strings.Contains(checked.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, checked, c.want)
		}
	}
}
