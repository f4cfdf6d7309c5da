package sqlite

import (
	"reflect"
	"testing"
)

// TestAddObject: lookout_sum_object's reading of the objects
// encoding/json writes: numbers, arrays, escaped keys; anything else fails.
func TestAddObject(t *testing.T) {
	sums := map[string]*[4]float64{}
	for _, s := range []string{`{"a":1,"b":[1,2,0.5,3]}`, `{}`, `{"a":2.5,"b":[1,0,0,1],"q\"u\u00e9":7}`} {
		if err := addObject(sums, []byte(s)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	got := map[string][4]float64{}
	for k, v := range sums {
		got[k] = *v
	}
	want := map[string][4]float64{"a": {3.5}, "b": {2, 2, 0.5, 4}, `q"ué`: {7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sums %v, want %v", got, want)
	}
	for _, s := range []string{``, `[]`, `{"a"}`, `{"a":x}`, `{"a":1`, `{"a":[1,2}`} {
		if err := addObject(map[string]*[4]float64{}, []byte(s)); err == nil {
			t.Errorf("%q read", s)
		}
	}
}
