package python

import "testing"

// FuzzAnalyze runs the analysis without Analyze's recover, so that a panic
// in the tokenizer, the parser or unparse fails the run.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"", "import os\nos.system('x')", "f'{a!r:{b}}'", "x = '\\N{BULLET}'", "\xff\xfe invalid utf8 \xc3",
		"match x:\n case [1, *r] | {'k': v}:\n  pass\n", `'"'"'"`, "((((((((((",
		"def f[T: (int, str), *Ts, **P](x: T) -> T: return x", "x = f'''{\n  a  # comment\n}'''\n",
		"async def f():\n    async with a as b:\n        await c(*d, **e)\n", "lambda x, *y, z=1, **w: (x, y, z, w)",
		"x = 1e400 + 0x_ff + 1_000j + b'\\xff'.decode()", "if True:\n\tx = 1\n        y = 2\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := analyze(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("syntax error without message")
			}
			if a.Imports != nil || a.Builtins != nil || a.FunctionCalls != nil {
				t.Fatalf("syntax error %v with findings %+v", err, a)
			}
			return
		}
		for _, c := range a.FunctionCalls {
			if c == "" {
				t.Fatalf("an empty function call in %+v", a)
			}
		}
	})
}
