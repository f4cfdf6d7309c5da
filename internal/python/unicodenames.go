package python

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/unicode/runenames"
)

// Lookup of Unicode character names for "\N{...}" escapes, as Python's
// unicodedata.lookup does it: case-insensitive, with the algorithmic names
// of CJK ideographs and Hangul syllables and the common name aliases.

var (
	unicodeNamesOnce sync.Once
	unicodeNames     map[string]rune
)

var unicodeAliases = map[string]rune{
	"NULL": 0, "NUL": 0, "BELL (BEL)": 7, "ALERT": 7, "BEL": 7, "BACKSPACE": 8, "BS": 8,
	"CHARACTER TABULATION": 9, "HORIZONTAL TABULATION": 9, "TAB": 9, "HT": 9,
	"LINE FEED": 10, "NEW LINE": 10, "END OF LINE": 10, "LF": 10, "NL": 10, "EOL": 10,
	"LINE TABULATION": 11, "VERTICAL TABULATION": 11, "VT": 11, "FORM FEED": 12, "FF": 12,
	"CARRIAGE RETURN": 13, "CR": 13, "ESCAPE": 27, "ESC": 27, "DELETE": 127, "DEL": 127,
	"NEXT LINE": 0x85, "NEL": 0x85, "NBSP": 0xA0, "SHY": 0xAD, "ZWSP": 0x200B, "ZWNJ": 0x200C,
	"ZWJ": 0x200D, "LRM": 0x200E, "RLM": 0x200F, "BYTE ORDER MARK": 0xFEFF, "BOM": 0xFEFF,
	"ZWNBSP": 0xFEFF, "WJ": 0x2060,
}

var (
	hangulL = strings.Fields("G GG N D DD R M B BB S SS _ J JJ C K T P H")
	hangulV = strings.Fields("A AE YA YAE EO E YEO YE O WA WAE OE YO U WEO WE WI YU EU YI I")
	hangulT = strings.Fields("_ G GG GS N NJ NH D L LG LM LB LS LT LP LH M B BS S SS NG J C K T P H")
)

func hangulName(r rune) string {
	s := int(r - 0xAC00)
	l, v, t := s/(21*28), (s%(21*28))/28, s%28
	name := "HANGUL SYLLABLE " + strings.Trim(hangulL[l], "_") + hangulV[v]
	if t > 0 {
		name += hangulT[t]
	}
	return name
}

// lookupUnicodeName returns the character with the given name.
func lookupUnicodeName(name string) (rune, bool) {
	unicodeNamesOnce.Do(func() {
		unicodeNames = make(map[string]rune, 300000)
		for r := rune(0); r <= 0x10FFFF; r++ {
			n := runenames.Name(r)
			switch {
			case n == "" || n == "<control>":
			case strings.HasPrefix(n, "<CJK Ideograph"):
				unicodeNames["CJK UNIFIED IDEOGRAPH-"+strings.ToUpper(strconv.FormatInt(int64(r), 16))] = r
			case n == "<Hangul Syllable>":
				unicodeNames[hangulName(r)] = r
			case strings.HasPrefix(n, "<"):
			default:
				unicodeNames[n] = r
			}
		}
		for k, v := range unicodeAliases {
			if _, ok := unicodeNames[k]; !ok {
				unicodeNames[k] = v
			}
		}
	})
	r, ok := unicodeNames[strings.ToUpper(name)]
	return r, ok
}
