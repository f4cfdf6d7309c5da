package eval

import (
	"errors"
	"fmt"
)

// ErrInvalid marks a request that breaks a rule: criteria that do not
// check, a benchmark selection that makes no tasks, runs of different
// datasets compared. The error's text says what, for the person who sent
// it (the API answers 422 with it).
var ErrInvalid = errors.New("invalid")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// criteriaError is criteria that do not check.
func criteriaError(err error) error {
	return invalidf("invalid criteria: %s", err.Error())
}
