package policy

import "github.com/lookout-dev/lookout/internal/pyre"

// The syntax tree. Node names follow Invariant's AST where one exists
// (BinaryExpr, MemberAccess, TypedIdentifier, SemanticPattern, ...), so the
// two implementations can be compared node for node. Positions are byte
// offsets into the source; errors convert them to line and column.

// Node is any syntax tree node.
type Node interface{ pos() int }

// Expr is an expression.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a top-level statement.
type Stmt interface {
	Node
	stmtNode()
}

type (
	// Ident is a name: a variable, constant, predicate, builtin or import.
	Ident struct {
		Off  int
		Name string
		sym  *symbol
		up   int // frames between the use and the declaring frame
	}

	// TypedIdent declares a quantified variable: (name: Type).
	TypedIdent struct {
		Off     int // of the name
		Name    string
		Type    string
		TypeOff int
		sym     *symbol
		up      int
		typ     *symbol // the resolved type
	}

	// StringLit is "text", 'text', """text""", with an optional r or f prefix.
	StringLit struct {
		Off   int
		value string
		Mod   byte
		Multi bool
		val   value
	}

	// NumberLit is an integer or float literal.
	NumberLit struct {
		Off   int
		Text  string
		IsInt bool
		Int   int64
		Float float64
	}

	// BoolLit is True or False.
	BoolLit struct {
		Off   int
		value bool
	}

	// NoneLit is None.
	NoneLit struct{ Off int }

	// ListLit is [a, b] or a parenthesized tuple (a, b).
	ListLit struct {
		Off   int
		Elems []Expr
		Tuple bool
	}

	// ObjectLit is {key: value, "key": value}.
	ObjectLit struct {
		Off     int
		Keys    []string
		KeyOffs []int
		Vals    []Expr
	}

	// UnaryExpr is not x, -x, +x.
	UnaryExpr struct {
		Off int
		Op  string
		X   Expr
	}

	// BinaryExpr is any binary operator, including the flow operators -> and
	// ~>, 'in', 'not in', 'is', 'is not' and 'contains_only'.
	BinaryExpr struct {
		Off   int // of the left operand
		OpOff int
		Op    string
		L, R  Expr
		// rDecl is set when the right operand declares variables: an 'or'
		// with a true left side still evaluates it (declarations must be seen).
		rDecl bool
	}

	// Assign is name := value inside a rule or predicate body.
	Assign struct {
		Off   int
		Name  string
		value Expr
		sym   *symbol
	}

	// CallExpr is f(args, key=value).
	CallExpr struct {
		Off     int
		Fn      Expr
		Args    []Expr
		KwNames []string
		KwOffs  []int
		KwVals  []Expr
		re      *pyre.Regexp // precompiled literal pattern for match/find
	}

	// MemberAccess is x.name.
	MemberAccess struct {
		Off     int
		X       Expr
		Name    string
		NameOff int
		styp    string // its static type (checker.staticType), once typed
		typed   bool
	}

	// KeyAccess is x[key].
	KeyAccess struct {
		Off int
		X   Expr
		Key Expr
	}

	// ListComprehension is [elem for var in iter if cond].
	ListComprehension struct {
		Off    int
		Elem   Expr
		Var    string
		VarOff int
		Iter   Expr
		Cond   Expr
		body   *bodyScope
		varSym *symbol
	}

	// TernaryOp is then if cond else else.
	TernaryOp struct {
		Off              int
		Then, Cond, Else Expr
	}

	// ToolReference is tool:name.
	ToolReference struct {
		Off  int
		Name string
		re   *pyre.Regexp // nil when Name is a plain name (compared directly)
	}

	// SemanticPattern is tool:name({arg: pattern, ...}).
	SemanticPattern struct {
		Off  int
		Tool *ToolReference
		Args []Expr
		m    matcher
	}

	// Wildcard is * inside a semantic pattern.
	Wildcard struct{ Off int }

	// ValueReference is <TYPE> inside a semantic pattern, e.g. <EMAIL_ADDRESS>.
	ValueReference struct {
		Off  int
		Type string
	}

	// Quantifier is a block such as count(min=2):, forall: (and not before it).
	Quantifier struct {
		Off  int
		Head Expr // the quantifier name or call
		Body []Expr
		body *bodyScope
	}
)

type (
	// ImportStmt is 'import m [as a]' or 'from m import a [as b], ...'.
	ImportStmt struct {
		Off    int
		From   bool
		Module string
		Alias  string // import m as alias
		Names  []ImportName
	}

	// ImportName is one name of a from-import.
	ImportName struct {
		Off   int
		Name  string
		Alias string
	}

	// RaiseStmt is raise <message or PolicyViolation(...)> if: <body>.
	RaiseStmt struct {
		Off    int
		Target Expr
		Body   []Expr
		body   *bodyScope
	}

	// DeclStmt is a constant NAME := expr or a predicate NAME(params) := body.
	DeclStmt struct {
		Off    int
		Name   string
		Params []Param
		IsPred bool
		Body   []Expr
		body   *bodyScope
		index  int // constant or predicate number
	}

	// Param is one predicate parameter name: Type.
	Param struct {
		Off     int
		Name    string
		Type    string
		TypeOff int
	}

	// DefStmt is def name(params): <statements>. Invariant parses these but
	// never runs the rules inside; neither does Lookout.
	DefStmt struct {
		Off    int
		Name   string
		Params []Param
		Body   []Stmt
	}
)

func (n *Ident) pos() int             { return n.Off }
func (n *TypedIdent) pos() int        { return n.Off }
func (n *StringLit) pos() int         { return n.Off }
func (n *NumberLit) pos() int         { return n.Off }
func (n *BoolLit) pos() int           { return n.Off }
func (n *NoneLit) pos() int           { return n.Off }
func (n *ListLit) pos() int           { return n.Off }
func (n *ObjectLit) pos() int         { return n.Off }
func (n *UnaryExpr) pos() int         { return n.Off }
func (n *BinaryExpr) pos() int        { return n.Off }
func (n *Assign) pos() int            { return n.Off }
func (n *CallExpr) pos() int          { return n.Off }
func (n *MemberAccess) pos() int      { return n.Off }
func (n *KeyAccess) pos() int         { return n.Off }
func (n *ListComprehension) pos() int { return n.Off }
func (n *TernaryOp) pos() int         { return n.Off }
func (n *ToolReference) pos() int     { return n.Off }
func (n *SemanticPattern) pos() int   { return n.Off }
func (n *Wildcard) pos() int          { return n.Off }
func (n *ValueReference) pos() int    { return n.Off }
func (n *Quantifier) pos() int        { return n.Off }
func (n *ImportStmt) pos() int        { return n.Off }
func (n *RaiseStmt) pos() int         { return n.Off }
func (n *DeclStmt) pos() int          { return n.Off }
func (n *DefStmt) pos() int           { return n.Off }

func (*Ident) exprNode()             {}
func (*TypedIdent) exprNode()        {}
func (*StringLit) exprNode()         {}
func (*NumberLit) exprNode()         {}
func (*BoolLit) exprNode()           {}
func (*NoneLit) exprNode()           {}
func (*ListLit) exprNode()           {}
func (*ObjectLit) exprNode()         {}
func (*UnaryExpr) exprNode()         {}
func (*BinaryExpr) exprNode()        {}
func (*Assign) exprNode()            {}
func (*CallExpr) exprNode()          {}
func (*MemberAccess) exprNode()      {}
func (*KeyAccess) exprNode()         {}
func (*ListComprehension) exprNode() {}
func (*TernaryOp) exprNode()         {}
func (*ToolReference) exprNode()     {}
func (*SemanticPattern) exprNode()   {}
func (*Wildcard) exprNode()          {}
func (*ValueReference) exprNode()    {}
func (*Quantifier) exprNode()        {}

func (*ImportStmt) stmtNode() {}
func (*RaiseStmt) stmtNode()  {}
func (*DeclStmt) stmtNode()   {}
func (*DefStmt) stmtNode()    {}

// walkExpr calls fn for e and every expression below it, depth first. fn
// returns false to skip the children of a node.
func walkExpr(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch n := e.(type) {
	case *ListLit:
		for _, x := range n.Elems {
			walkExpr(x, fn)
		}
	case *ObjectLit:
		for _, x := range n.Vals {
			walkExpr(x, fn)
		}
	case *UnaryExpr:
		walkExpr(n.X, fn)
	case *BinaryExpr:
		walkExpr(n.L, fn)
		walkExpr(n.R, fn)
	case *Assign:
		walkExpr(n.value, fn)
	case *CallExpr:
		walkExpr(n.Fn, fn)
		for _, x := range n.Args {
			walkExpr(x, fn)
		}
		for _, x := range n.KwVals {
			walkExpr(x, fn)
		}
	case *MemberAccess:
		walkExpr(n.X, fn)
	case *KeyAccess:
		walkExpr(n.X, fn)
		walkExpr(n.Key, fn)
	case *ListComprehension:
		walkExpr(n.Iter, fn)
		walkExpr(n.Elem, fn)
		walkExpr(n.Cond, fn)
	case *TernaryOp:
		walkExpr(n.Then, fn)
		walkExpr(n.Cond, fn)
		walkExpr(n.Else, fn)
	case *SemanticPattern:
		walkExpr(n.Tool, fn)
		for _, x := range n.Args {
			walkExpr(x, fn)
		}
	case *Quantifier:
		walkExpr(n.Head, fn)
		for _, x := range n.Body {
			walkExpr(x, fn)
		}
	}
}
