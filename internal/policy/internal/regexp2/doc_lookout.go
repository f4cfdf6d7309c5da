// This is github.com/dlclark/regexp2 v1.12.0 (MIT, see LICENSE and ATTRIB),
// copied without its tests and patched for Lookout's policy engine, which
// needs a backtracking search that a context can stop (context.go; the
// runner polls the context; a timeout error no longer quotes the input).
// Nothing else changed; upstream's tests pass against the copy. Update by
// copying a newer release over it and reapplying context.go and the three
// marked "lookout patch" places in runner.go.

package regexp2
