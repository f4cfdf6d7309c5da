package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"

	"modernc.org/sqlite"
)

// lookout_sum_object(obj) is an aggregate over JSON objects whose values
// are numbers or arrays of up to 4 numbers (a dashboard's columns of
// trace_stats): the object of the sums by key, each an array of 4. It
// spares SQLite a sort of every (key, value) pair json_each would give, a
// GROUP BY of hundreds of thousands of rows for a dashboard of 100,000
// traces (sqlstore.Dialect.SumObject). readDriver is the driver of the
// read connections, with it.
func readDriver() *sqlite.Driver {
	d := &sqlite.Driver{}
	if err := d.RegisterFunction("lookout_sum_object", &sqlite.FunctionImpl{NArgs: 1, Deterministic: true, VolatileArgs: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) {
			return &sumObject{sums: map[string]*[4]float64{}}, nil
		}}); err != nil {
		panic(err) // a fresh driver has no function of that name
	}
	return d
}

type sumObject struct {
	sums map[string]*[4]float64
}

func (a *sumObject) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	var b []byte
	switch v := args[0].(type) {
	case nil:
		return nil
	case string:
		b = []byte(v) // copied by the conversion: v is SQLite's memory
	case []byte:
		b = v
	default:
		return fmt.Errorf("lookout_sum_object: a %T", v)
	}
	return addObject(a.sums, b)
}

func (a *sumObject) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return fmt.Errorf("lookout_sum_object is not a window function")
}

func (a *sumObject) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	out := make(map[string][4]float64, len(a.sums))
	for k, v := range a.sums {
		out[k] = *v
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func (a *sumObject) Final(*sqlite.FunctionContext) {}

// addObject adds the members of the JSON object b to sums: a number to
// the first sum, an array's numbers to the sums in order. It reads the
// JSON encoding/json writes (no spaces), else fails.
func addObject(sums map[string]*[4]float64, b []byte) error {
	bad := func() error { return fmt.Errorf("lookout_sum_object: not an object of numbers: %.60q", b) }
	i := 0
	if len(b) < 2 || b[0] != '{' {
		return bad()
	}
	i = 1
	if b[i] == '}' {
		return nil
	}
	for {
		// The key: a string, unquoted the slow way when it has escapes.
		if i >= len(b) || b[i] != '"' {
			return bad()
		}
		j, esc := i+1, false
		for ; j < len(b) && b[j] != '"'; j++ {
			if b[j] == '\\' {
				esc = true
				j++
			}
		}
		if j >= len(b) {
			return bad()
		}
		var key string
		if esc {
			var err error
			if key, err = strconv.Unquote(string(b[i : j+1])); err != nil {
				if json.Unmarshal(b[i:j+1], &key) != nil {
					return bad()
				}
			}
		} else {
			key = string(b[i+1 : j])
		}
		i = j + 1
		if i >= len(b) || b[i] != ':' {
			return bad()
		}
		i++
		s := sums[key]
		if s == nil {
			s = &[4]float64{}
			sums[key] = s
		}
		num := func(k int) error {
			j := i
			for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != '}' {
				j++
			}
			x, err := strconv.ParseFloat(string(b[i:j]), 64)
			if err != nil {
				return bad()
			}
			if k < 4 {
				s[k] += x
			}
			i = j
			return nil
		}
		if i < len(b) && b[i] == '[' {
			i++
			for k := 0; i < len(b) && b[i] != ']'; k++ {
				if err := num(k); err != nil {
					return err
				}
				if i < len(b) && b[i] == ',' {
					i++
				}
			}
			i++ // ]
		} else if err := num(0); err != nil {
			return err
		}
		if i >= len(b) {
			return bad()
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return nil
		default:
			return bad()
		}
	}
}
