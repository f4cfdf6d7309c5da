// Package policy implements Lookout's guardrail rule language, which is the
// policy language of Invariant Guardrails: policies written for Invariant run
// unchanged, with the same results (see CONFORMANCE.md), and much faster.
//
// # The language by example
//
// A policy is a list of rules. A rule raises a violation for every
// assignment of its variables that makes all its conditions true:
//
//	from invariant.detectors import secrets          # detectors are imported
//
//	ALLOWED := ["alice@example.com", "bob@example.com"]   # a constant
//
//	is_external(to: str) :=                          # a predicate
//	    to not in ALLOWED
//
//	raise "must not email outsiders after reading the inbox" if:
//	    (out: ToolOutput) -> (call: ToolCall)        # out comes before call
//	    out is tool:get_inbox                        # output of a get_inbox call
//	    call is tool:send_email({to: ".*@.*"})       # arguments match regexes
//	    is_external(call.function.arguments.to)
//
//	raise PolicyViolation("secret in a message", msg, kind=k) if:
//	    (msg: Message)                               # any message
//	    msg.role == "assistant" and not msg.tool_calls
//	    (k: str) in secrets(msg)                     # one violation per kind
//
//	raise "answered right after a tool output" if:
//	    (o: ToolOutput) ~> (m: Message)              # m immediately follows o
//	    count(min=2):                                # quantifier block
//	        (c: ToolCall)
//	        c -> o
//	    lines := m.content.splitlines()              # a local value
//	    any([len(l) > 200 for l in lines])           # list comprehension
//	    input.strict if len(lines) > 3 else False    # policy parameter, ternary
//
// Variables are declared with (name: Type). Types: Message, ToolCall,
// ToolOutput, Tool, ToolParameter, Image, TextChunk, str, int, float, bool,
// list, dict, and types exported by detectors. (x: T) alone ranges over all
// objects of type T in the trace; (x: T) in expr over those inside expr's
// value. Flows: a -> b (a before b), a ~> b (b immediately after a; a
// message's first tool call follows the message, each further call the
// previous one). Semantic patterns: x is tool:name, x is tool:name({key:
// "regex", list: [*, 2], other: <EMAIL_ADDRESS>}); a tool output matches
// through the call it answers. Blocks: count(min=..., max=...): and forall:,
// with not before them. Operators: and or not, == != < <= > >= in, not in,
// is, is not, contains_only, + - * / % **, x.attr, x[key], f(args,
// key=value), [.. for .. in .. if ..], a if c else b, literals ('...', "...",
// """...""", r"...", numbers, True, False, None, [...], {...}). Strings keep
// backslashes as written (regular expressions need no doubling), except that
// \" (\') stands for the quote. Indentation works as in Invariant (see
// lexer.go).
//
// Builtins: match, find, len, any, all, min, max, sum, empty, lower, upper,
// print, text, image, tool_call, server, json_loads, str, int, float, bool,
// list, dict, tuple; str methods strip lower upper splitlines split format
// join; dict methods keys values items get; modules json (loads, dumps),
// invariant (all builtins and types), invariant.access_control
// (should_allow_rbac), and the detector modules (see detector.go). Other
// methods, attributes and modules are refused, as in Invariant's sandbox.
// Regular expressions have Python's syntax and meaning (package pyre).
//
// # Evaluation
//
// Conditions are evaluated in order with three-valued logic, discovering
// variables as Invariant does; see search.go for how Lookout avoids
// enumerating every tuple. Each satisfying assignment is one Violation with
// its arguments, a stable key, the variables' bindings and the ranges it
// involves, as addresses into the event list ("2.tool_calls.0",
// "0.content:7-8", code points). A condition whose value is not a boolean
// (say a bare string) never holds, as in Invariant. Events that are neither
// messages, tool outputs, tool calls nor tool definitions are skipped.
//
// # API
//
//	p, err := policy.Parse(src)                    // *LoadError with positions on failure
//	p, err := policy.ParseContext(ctx, name, src)  // stopped when ctx is done
//	res, err := p.Analyze(events, params)          // *RuntimeError on failure
//	res, err := p.AnalyzePending(past, pending, params)
//	res, err := p.AnalyzePendingContext(ctx, past, pending, params) // stopped with ctx
//	res.Truncated                                  // more violations than Limits.Violations
//	res, snap, err := p.AnalyzeExtension(ctx, prev, events, params) // a grown trace, from prev's snapshot (incremental.go)
//	m := policy.NewMonitor(p, params)              // reports each violation once
//	res, err := m.Analyze(events)
//	for _, v := range res.Violations { v.Message(); v.Ranges; v.ToDict() }
//
// A Policy is safe for concurrent use. Each analysis is bounded by Limits
// (steps, one deadline, memory) and by its context; exceeding them is a
// RuntimeError of class BudgetExceeded instead of a hang, and past
// Limits.Violations the result is truncated (budget.go). A Limiter bounds
// how many checks run at once.
package policy
