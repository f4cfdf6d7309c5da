// Package python reads Python source the way CPython 3.12's ast module
// does, for the detectors that look at code an agent wrote or ran. It holds
// a tokenizer (lex.go), a recursive-descent parser of the grammar that
// reports the syntax errors ast.parse reports (parse.go), and the analysis
// Invariant's python_code() makes of the tree (this file): imports, the
// builtins used, and the function calls as ast.unparse renders them
// (unparse.go).
//
// It never executes anything, and no function in this package panics,
// whatever its input.
package python

import (
	"fmt"
	"strings"
)

// Analysis is what Analyze finds in valid Python source.
type Analysis struct {
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
}

// Analyze parses src as Python 3.12 and reports its imports, builtins used
// and function calls, visiting the tree in the order ast.NodeVisitor does.
//
// Line endings are normalised as Python does. The error, when src does not
// parse, is the syntax error ast.parse raises (tokenizer errors, grammar
// errors, invalid assignment targets, misplaced arguments or parameters;
// not those only the compiler raises, such as "return" outside a function),
// with its line when it has one; the Analysis is then empty.
func Analyze(src string) (a Analysis, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, err = Analysis{}, fmt.Errorf("internal error in the Python analyzer: %v", r)
		}
	}()
	return analyze(src)
}

// analyze is Analyze without the recover, for the fuzz test.
func analyze(src string) (Analysis, error) {
	toks, err := tokenize(src)
	if err != nil {
		return Analysis{}, err
	}
	mod, err := parse(toks)
	if err != nil {
		return Analysis{}, err
	}
	v := &visitor{seen: map[string]bool{}}
	v.visit(mod, 0)
	return v.res, nil
}

// pythonBuiltins are the names in Python's builtins module (3.11/3.12) plus
// the ones the site module adds (exit, quit, help, copyright, ...).
var pythonBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None NotADirectoryError NotImplemented NotImplementedError OSError OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__ __doc__ __import__ __loader__ __name__ __package__ __spec__ abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter len license list locals map max memoryview min next object oct open ord pow print property quit range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip`) {
		m[n] = true
	}
	return m
}()

// IsBuiltin reports whether name is one of Python's builtins.
func IsBuiltin(name string) bool { return pythonBuiltins[name] }

type visitor struct {
	res  Analysis
	seen map[string]bool
}

func (v *visitor) visit(n *node, depth int) {
	if n == nil || depth > 10*maxParseDepth {
		return
	}
	switch n.kind {
	case nName:
		if pythonBuiltins[n.name] {
			v.res.Builtins = append(v.res.Builtins, n.name)
		}
		return
	case nImport:
		v.res.Imports = append(v.res.Imports, n.names...)
		return
	case nImportFrom:
		if n.name != "" {
			v.res.Imports = append(v.res.Imports, n.name)
		}
		return
	case nCall:
		if len(n.kids) > 0 {
			call := strings.TrimSpace(unparse(n.kids[0], precTest))
			if !v.seen[call] {
				v.seen[call] = true
				v.res.FunctionCalls = append(v.res.FunctionCalls, call)
			}
		}
	}
	for _, k := range n.kids {
		v.visit(k, depth+1)
	}
}
