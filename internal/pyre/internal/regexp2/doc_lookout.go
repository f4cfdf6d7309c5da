// This is github.com/dlclark/regexp2 v1.12.0 (MIT, see LICENSE and ATTRIB),
// copied without its tests and patched for package pyre (Python's re for
// Lookout's policy engine), which needs a backtracking search that a
// context can stop (context.go; the runner polls the context; a timeout
// error no longer quotes the input). Nothing else changed but the import
// paths; upstream's tests pass against the copy. Update by copying a newer
// release over it, pointing its imports of regexp2/syntax at this copy,
// and reapplying context.go and the three marked "lookout patch" places in
// runner.go.

package regexp2
