// This file registers the model-free detectors of internal/policy/detectors
// with the policy language. It lives in package policy (the detectors package
// imports nothing from here, so there is no cycle). With it, 233 of 264
// conformance cases pass; see CONFORMANCE.md for the rest, which need a
// model, an LLM, semgrep or OCR.

package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/lookout-dev/lookout/internal/policy/detectors"
)

// wrapUnavailable maps the detectors package's "needs a model" errors to
// ErrDetectorUnavailable.
func wrapUnavailable(err error) error {
	if err != nil && errors.Is(err, detectors.ErrUnavailable) {
		return fmt.Errorf("%w: %v", ErrDetectorUnavailable, err)
	}
	return err
}

func detectorMatches(c *DetectorCall, f func(string) ([]detectors.Match, error)) (any, error) {
	var kinds []string
	for _, t := range c.Arg(0).Texts() {
		ms, err := f(t.S)
		if err != nil {
			return nil, wrapUnavailable(err)
		}
		for _, m := range ms {
			c.MarkRunes(t, m.Start, m.End)
			kinds = append(kinds, m.Kind)
		}
	}
	return kinds, nil
}

func argText(c *DetectorCall) string {
	s := ""
	for i, t := range c.Arg(0).Texts() {
		if i > 0 {
			s += "\n"
		}
		s += t.S
	}
	return s
}

func pythonCode(c *DetectorCall) (any, error) {
	r := detectors.PythonCode(argText(c))
	return Record{Type: "PythonDetectorResult", Fields: map[string]any{"imports": r.Imports, "builtins": r.Builtins, "function_calls": r.FunctionCalls, "syntax_error": r.SyntaxError, "syntax_error_exception": r.SyntaxErrorException}}, nil
}

func init() {
	RegisterDetector(Detector{Name: "secrets", Modules: []string{"invariant.detectors", "invariant.detectors.secrets"}, Func: func(c *DetectorCall) (any, error) {
		kinds := c.Arg(1).Strings() // optional: e.g. ["BASE64_HIGH_ENTROPY_STRING"]
		return detectorMatches(c, func(s string) ([]detectors.Match, error) { return detectors.Secrets(s, kinds) })
	}})
	RegisterDetector(Detector{Name: "pii", Modules: []string{"invariant.detectors", "invariant.detectors.pii"},
		Partial: "named entities (PERSON, LOCATION, NRP, DATE_TIME) need a model", Func: pii})
	RegisterDetector(Detector{Name: "unicode", Modules: []string{"invariant.detectors", "invariant.detectors.unicode"}, Func: func(c *DetectorCall) (any, error) {
		cats := c.Arg(1).Strings() // optional: only these categories
		return detectorMatches(c, func(s string) ([]detectors.Match, error) { return detectors.Unicode(s, cats) })
	}})
	RegisterDetector(Detector{Name: "copyright", Modules: []string{"invariant.detectors", "invariant.detectors.copyright"}, Func: func(c *DetectorCall) (any, error) {
		th := detectors.DefaultCopyrightThreshold
		if a, ok := c.Kwarg("threshold"); ok {
			th, _ = a.Float()
		}
		return detectorMatches(c, func(s string) ([]detectors.Match, error) { return detectors.Copyright(s, th) })
	}})
	RegisterDetector(Detector{Name: "python_code", Modules: []string{"invariant.detectors", "invariant.detectors.code"}, Func: pythonCode})
	// ipython_code is python_code, as in Invariant: its ipython_code calls
	// python_code(data, ipython_mode=True), whose ipython_mode parameter is
	// never passed on to PythonCodeDetector.detect, so no IPython cell
	// transformation happens and "!ls" or "%time f()" is a syntax error
	// (invariant/analyzer/stdlib/invariant/detectors/code.py).
	RegisterDetector(Detector{Name: "ipython_code", Modules: []string{"invariant.detectors", "invariant.detectors.code"}, Func: pythonCode})
	RegisterDetector(Detector{Name: "html_code", Modules: []string{"invariant.parsers.html"}, Func: func(c *DetectorCall) (any, error) {
		r := detectors.HTMLCode(argText(c))
		return Record{Type: "HTMLParseResult", Fields: map[string]any{"alt_texts": r.AltTexts, "links": r.Links}}, nil
	}})
	RegisterDetector(Detector{Name: "links", Modules: []string{"invariant.parsers.html"}, Func: func(c *DetectorCall) (any, error) {
		return detectors.Links(argText(c)), nil
	}})
	RegisterDetector(Detector{Name: "fuzzy_contains", Modules: []string{"invariant.detectors", "invariant.detectors.fuzzy_matching"}, Func: func(c *DetectorCall) (any, error) {
		q, _ := c.Arg(1).Str()
		th := detectors.DefaultFuzzyThreshold
		if a, ok := c.Kwarg("query_similarity_threshold"); ok {
			th, _ = a.Float()
		}
		s, _ := c.Arg(0).Str()
		ok, err := detectors.FuzzyContains(s, q, th)
		return ok, wrapUnavailable(err)
	}})
}

// pii is pii(data, entities=None): the PII entities found in each text of
// data, one per finding, in order of position, each marked. presidio's
// pattern entities come from detectors.PII; the named entities (PERSON,
// LOCATION, ORGANIZATION, NRP, DATE_TIME) from the detector model when the
// policy has one (without entities, all of both, as with Invariant), and
// asking for one without a model fails as unavailable.
func pii(c *DetectorCall) (any, error) {
	ents := c.Arg(1).Strings()
	if a, ok := c.Kwarg("entities"); ok {
		ents = a.Strings()
	}
	if c.model == nil {
		return detectorMatches(c, func(s string) ([]detectors.Match, error) { return detectors.PII(s, ents) })
	}
	var patternEnts []string
	modelEnts := map[string]bool{}
	for _, e := range ents {
		if slices.Contains(detectors.PIIModelEntities, e) {
			modelEnts[e] = true
		} else {
			patternEnts = append(patternEnts, e)
		}
	}
	if len(patternEnts) > 0 {
		// an unknown or unported entity fails before any request
		if _, err := detectors.PII("", patternEnts); err != nil {
			return nil, wrapUnavailable(err)
		}
	}
	all := len(ents) == 0
	if all {
		for _, e := range detectors.PIIModelEntities {
			modelEnts[e] = true
		}
	}
	texts := c.Arg(0).Texts()
	var named [][]detectors.Match
	if len(modelEnts) > 0 {
		var err error
		if named, err = piiModel(c, texts, modelEnts); err != nil {
			return nil, err
		}
	}
	var kinds []string
	for i, t := range texts {
		var ms []detectors.Match
		if all || len(patternEnts) > 0 {
			found, err := detectors.PII(t.S, patternEnts)
			if err != nil {
				return nil, wrapUnavailable(err)
			}
			ms = found
		}
		if named != nil {
			ms = append(ms, named[i]...)
		}
		slices.SortStableFunc(ms, func(a, b detectors.Match) int {
			if a.Start != b.Start {
				return a.Start - b.Start
			}
			return a.End - b.End
		})
		for _, m := range ms {
			c.MarkRunes(t, m.Start, m.End)
			kinds = append(kinds, m.Kind)
		}
	}
	return kinds, nil
}
