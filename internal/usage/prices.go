package usage

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input, Output float64
}

// Prices is a model price table: names matched exactly, then by the
// longest name in the table that begins the model's name, so that a dated
// release ("gpt-4o-2024-08-06") finds its family ("gpt-4o").
type Prices struct {
	AsOf   string // the date the prices were read, as the file gives it
	models map[string]Price
	names  []string // the table's names, longest first, for prefix matching
}

//go:embed prices.json
var defaultPrices []byte

var builtin = func() *Prices {
	p, err := parsePrices(defaultPrices, "prices.json", nil)
	if err != nil {
		panic(err) // the embedded table is tested
	}
	return p
}()

// Default is the table Lookout ships (prices.json in this package). It is
// shared: do not change it.
func Default() *Prices { return builtin }

// Load reads an operator's price file (the shape of prices.json; "as_of"
// optional) over the default table: its models replace or add entries. A
// malformed file is an error naming the file and the JSON path.
func Load(path string) (*Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	return Parse(b, path)
}

// Parse is Load of a file's bytes; name is used in errors.
func Parse(data []byte, name string) (*Prices, error) {
	return parsePrices(data, name, builtin)
}

func parsePrices(data []byte, name string, base *Prices) (*Prices, error) {
	p := &Prices{models: map[string]Price{}}
	if base != nil {
		p.AsOf = base.AsOf
		for k, v := range base.models {
			p.models[k] = v
		}
	}
	s := jsonscan.New(data)
	s.SetRoot("$")
	fail := func(err error) (*Prices, error) {
		var je *jsonscan.Error
		if errors.As(err, &je) {
			line, col := jsonscan.LineCol(data, je.Offset)
			return nil, fmt.Errorf("prices file %s:%d:%d: %s: %s", name, line, col, je.Path, je.Msg)
		}
		return nil, fmt.Errorf("prices file %s: %w", name, err)
	}
	err := s.Object(func(key string) error {
		switch key {
		case "as_of":
			v, err := s.String("as_of")
			p.AsOf = v
			return err
		case "models":
			return s.Object(func(model string) error {
				if strings.TrimSpace(model) == "" {
					return s.Errorf("a model name must not be empty")
				}
				var pr Price
				var in, out bool
				err := s.Object(func(k string) error {
					var err error
					switch k {
					case "input":
						pr.Input, err = s.Float64("input")
						in = true
					case "output":
						pr.Output, err = s.Float64("output")
						out = true
					default:
						return s.Errorf("unknown member %q: a price has input and output (dollars per million tokens)", k)
					}
					if err == nil && (pr.Input < 0 || pr.Output < 0) {
						return s.Errorf("a price must not be negative")
					}
					return err
				})
				if err != nil {
					return err
				}
				if !in || !out {
					return s.Errorf("model %q needs both input and output (dollars per million tokens)", model)
				}
				p.models[strings.ToLower(model)] = pr
				return nil
			})
		default: // currency, unit, note: for readers
			return s.Skip()
		}
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return fail(err)
	}
	p.names = make([]string, 0, len(p.models))
	for k := range p.models {
		p.names = append(p.names, k)
	}
	sort.Slice(p.names, func(i, j int) bool {
		if len(p.names[i]) != len(p.names[j]) {
			return len(p.names[i]) > len(p.names[j])
		}
		return p.names[i] < p.names[j]
	})
	return p, nil
}

// Len is the number of models in the table.
func (p *Prices) Len() int { return len(p.models) }

// Lookup finds a model's price: the name exactly, else the longest name in
// the table that begins it; failing both, the same for the part after the
// last "/" (a provider's or router's prefix: "mistral/mistral-small-latest",
// "publishers/google/models/gemini-2.5-flash"), then after a provider's
// name and a dot (Bedrock: "anthropic.claude-3-haiku-20240307-v1:0"). Case does not matter. It
// returns the table's name that matched.
func (p *Prices) Lookup(model string) (Price, string, bool) {
	if p == nil || model == "" {
		return Price{}, "", false
	}
	if pr, name, ok := p.lookup(model); ok {
		return pr, name, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 && i+1 < len(model) {
		if pr, name, ok := p.lookup(model[i+1:]); ok {
			return pr, name, true
		}
		model = model[i+1:]
	}
	// Bedrock's ids put the provider before a dot: "anthropic.claude-...",
	// "us.anthropic.claude-...".
	for i := 0; i < len(model); i++ {
		if model[i] != '.' {
			continue
		}
		if i == 0 || !isLetter(model[i-1]) {
			break // a version's dot: "gpt-4.1"
		}
		if pr, name, ok := p.lookup(model[i+1:]); ok {
			return pr, name, true
		}
	}
	return Price{}, "", false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isLetter(c) || '0' <= c && c <= '9' }

func (p *Prices) lookup(model string) (Price, string, bool) {
	if pr, ok := p.models[model]; ok {
		return pr, model, true
	}
	if hasUpper(model) {
		model = strings.ToLower(model)
		if pr, ok := p.models[model]; ok {
			return pr, model, true
		}
	}
	for _, n := range p.names {
		// A prefix ends where the name's next part begins: "gpt-4" is
		// not "gpt-45".
		if len(n) < len(model) && model[:len(n)] == n && !isAlnum(model[len(n)]) {
			return p.models[n], n, true
		}
	}
	return Price{}, "", false
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
