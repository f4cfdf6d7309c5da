package detectors

import (
	"strings"

	"golang.org/x/net/html"
)

// linkRe is Invariant's link pattern: a scheme, a host of word characters,
// dots, dashes and %-escapes, then path segments running to the next space,
// newline or double quote. Python's \w is Unicode-aware.
var linkRe = lazyRegexp(`https?://(?:[-\p{L}\p{N}_.]|%[0-9a-fA-F]{2})+(?:/[^ \n"]+)*`)

// LinkMatches returns every link in text as Invariant's links() finds them
// (its regular expression over plain text), with positions, Kind "LINK".
// Note that the path part runs to the next space, newline or double quote,
// so a Markdown link "(https://a.com/x)," yields "https://a.com/x),".
func LinkMatches(text string) []Match {
	ri := newRuneIndex(text)
	var out []Match
	for _, loc := range linkRe.get().FindAllStringIndex(text, -1) {
		out = append(out, ri.match("LINK", loc[0], loc[1], 1))
	}
	return out
}

// Links returns the distinct links of text in order of first occurrence:
// Invariant's links(text) (which returns a set, so without a defined order).
func Links(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range LinkMatches(text) {
		if !seen[m.Text] {
			seen[m.Text] = true
			out = append(out, m.Text)
		}
	}
	return out
}

// HTMLResult is what HTMLCode extracts from HTML.
type HTMLResult struct {
	// AltTexts are the alt attributes of <img> tags, in document order
	// (an alt attribute without a value gives "").
	AltTexts []string
	// Links are the href attributes of <a> tags, then the links found in
	// the raw text by Links, without duplicates, in order of first occurrence.
	Links []string
	// Tags are the names of all start tags, lower-cased, in document order.
	Tags []string
}

// HTMLCode parses text as HTML, leniently as Python's html.parser does
// (broken markup is fine), and returns Invariant's html_code() fields
// alt_texts and links, plus the tag names. Attribute values are unescaped.
func HTMLCode(text string) HTMLResult {
	var res HTMLResult
	seen := map[string]bool{}
	addLink := func(l string) {
		if !seen[l] {
			seen[l] = true
			res.Links = append(res.Links, l)
		}
	}
	z := html.NewTokenizer(strings.NewReader(text))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		name := strings.ToLower(tok.Data)
		res.Tags = append(res.Tags, name)
		for _, a := range tok.Attr {
			key := strings.ToLower(a.Key)
			switch {
			case name == "img" && key == "alt":
				res.AltTexts = append(res.AltTexts, a.Val)
			case name == "a" && key == "href":
				addLink(a.Val)
			}
		}
	}
	for _, l := range Links(text) {
		addLink(l)
	}
	return res
}
