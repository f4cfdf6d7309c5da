package detectors

import "github.com/lookout-dev/lookout/internal/python"

// PythonResult is what PythonCode reports about a piece of Python source,
// the fields of Invariant's PythonDetectorResult.
type PythonResult struct {
	// Imports are the imported modules in source order: the full dotted
	// name of each "import a.b" and the module of each "from a.b import
	// c" (relative imports give the module without its dots; "from .
	// import x" gives nothing).
	Imports []string
	// Builtins are the names of Python builtins (print, eval, open, ...)
	// used as names anywhere in the code, in visiting order, repeated for
	// each use.
	Builtins []string
	// FunctionCalls are the called expressions, rendered as Python's
	// ast.unparse renders them ("print", "os.system", "a.b().c"), without
	// duplicates, in visiting order.
	FunctionCalls []string
	// SyntaxError is true when the code does not parse. The other fields
	// are then empty.
	SyntaxError bool
	// SyntaxErrorException is the syntax error message, "" if none.
	SyntaxErrorException string
}

// HasFunctionCall reports whether name is among the function calls.
func (r PythonResult) HasFunctionCall(name string) bool {
	return contains(r.FunctionCalls, name)
}

// UsesEvalOrExec reports whether the code calls or names eval or exec
// (directly as builtins).
func (r PythonResult) UsesEvalOrExec() bool {
	return contains(r.Builtins, "eval") || contains(r.Builtins, "exec")
}

// PythonCode analyses Python source as Invariant's python_code() does with
// the ast module: package python parses the code with a pure-Go parser of
// Python 3.12's grammar and reports imports, builtins used, function calls,
// and whether the code has a syntax error. It never executes anything.
//
// Line endings are normalised as Python does. Syntax errors are those
// ast.parse raises (tokenizer errors, grammar errors, invalid assignment
// targets, misplaced arguments or parameters), not those only the compiler
// raises (such as "return" outside a function).
func PythonCode(code string) PythonResult {
	a, err := python.Analyze(code)
	if err != nil {
		return PythonResult{SyntaxError: true, SyntaxErrorException: err.Error()}
	}
	return PythonResult{Imports: a.Imports, Builtins: a.Builtins, FunctionCalls: a.FunctionCalls}
}

// IsPythonBuiltin reports whether name is one of Python's builtins.
func IsPythonBuiltin(name string) bool { return python.IsBuiltin(name) }
