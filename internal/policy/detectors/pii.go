package detectors

import (
	"math/big"
	"net/netip"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"
)

// PII entity names (presidio's).
const (
	PIIEmail      = "EMAIL_ADDRESS"
	PIIPhone      = "PHONE_NUMBER"
	PIICreditCard = "CREDIT_CARD"
	PIIIBAN       = "IBAN_CODE"
	PIIIP         = "IP_ADDRESS"
	PIIUSSSN      = "US_SSN"
	PIIURL        = "URL"
)

// PIIEntities are the entities PII detects, in the order it runs them.
var PIIEntities = []string{PIIEmail, PIIPhone, PIICreditCard, PIIIBAN, PIIIP, PIIUSSSN, PIIURL}

// PIIModelEntities are presidio entities found by a named-entity model;
// asking PII for one of them is an error wrapping ErrUnavailable.
var PIIModelEntities = []string{"PERSON", "LOCATION", "NRP", "DATE_TIME", "ORGANIZATION"}

// piiUnimplemented are presidio's other pattern recognizers, not ported.
var piiUnimplemented = []string{
	"CRYPTO", "MEDICAL_LICENSE", "US_BANK_NUMBER", "US_DRIVER_LICENSE", "US_ITIN",
	"US_PASSPORT", "UK_NHS", "UK_NINO", "SG_NRIC_FIN", "SG_UEN", "AU_ABN", "AU_ACN", "AU_TFN",
	"AU_MEDICARE", "IN_PAN", "IN_AADHAAR", "IN_VEHICLE_REGISTRATION", "IN_VOTER", "IN_PASSPORT",
	"ES_NIF", "ES_NIE", "IT_FISCAL_CODE", "IT_DRIVER_LICENSE", "IT_VAT_CODE", "IT_PASSPORT",
	"IT_IDENTITY_CARD", "PL_PESEL", "FI_PERSONAL_IDENTITY_CODE",
}

// PIIScoreThreshold is Invariant's threshold: a finding counts when its
// score is strictly above it.
const PIIScoreThreshold = 0.5

// Presidio's context enhancement: a context word among the five keywords
// before a finding adds 0.35 to its score (and lifts it to at least 0.4).
const (
	piiContextFactor   = 0.35
	piiContextMinScore = 0.4
	piiContextPrefix   = 5
)

// PII finds personally identifiable information with presidio's pattern
// recognizers, as Invariant's pii() runs them: every finding whose score is
// strictly above 0.5 is returned, sorted by position.
//
// entities selects entity names (PIIEntities); empty means all of them. A
// model-based entity (PIIModelEntities) or one of presidio's pattern
// entities not ported here gives an error wrapping ErrUnavailable; a name
// presidio does not know gives one wrapping ErrUnknownKind. Called without
// entities, PII scans the pattern entities only: Invariant (with spaCy)
// would in addition report PERSON, LOCATION, NRP and DATE_TIME.
//
// Scores follow presidio: validated findings (e-mail with a known public
// suffix, Luhn-valid card, IBAN with a good checksum and country length)
// score 1; an IPv4/IPv6 address 0.6; a URL with a scheme 0.6 and one without
// 0.5; a phone number 0.4; a US SSN in the form ddd-dd-dddd 0.5 (after
// presidio's invalidation rules). A context word (for example "phone" or
// "ssn") among the five preceding keywords adds 0.35, so a phone number or
// an SSN counts only next to such a word, as with Invariant.
//
// Phone numbers are recognised by a heuristic (7 to 15 digits; NANP, a
// national trunk prefix 0, Indian mobile numbers, or +country code), not by
// libphonenumber's per-region metadata.
func PII(text string, entities []string) ([]Match, error) {
	want := map[string]bool{}
	if len(entities) == 0 {
		for _, e := range PIIEntities {
			want[e] = true
		}
	}
	for _, e := range entities {
		switch {
		case contains(PIIEntities, e):
			want[e] = true
		case contains(PIIModelEntities, e):
			return nil, unavailable("PII entity %s needs a named-entity model", e)
		case contains(piiUnimplemented, e):
			return nil, unavailable("PII entity %s is not implemented", e)
		default:
			return nil, unknown("PII entity %q", e)
		}
	}
	p := &piiScan{s: text, ri: newRuneIndex(text)}
	if want[PIIEmail] {
		p.emails()
	}
	if want[PIIPhone] {
		p.phones()
	}
	if want[PIICreditCard] {
		p.creditCards()
	}
	if want[PIIIBAN] {
		p.ibans()
	}
	if want[PIIIP] {
		p.ips()
	}
	if want[PIIUSSSN] {
		p.ssns()
	}
	if want[PIIURL] {
		p.urls()
	}
	p.enhance()
	out := removeDuplicates(p.found)
	kept := out[:0]
	for _, m := range out {
		if m.Score > PIIScoreThreshold {
			kept = append(kept, m)
		}
	}
	sortMatches(kept)
	return kept, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type piiScan struct {
	s     string
	ri    *runeIndex
	found []Match
	// byte start of each finding, for context lookup
	starts []int
	kw     []keyword
}

type keyword struct {
	start int // byte offset
	word  string
}

func (p *piiScan) add(kind string, bs, be int, score float64) {
	if be <= bs {
		return
	}
	p.found = append(p.found, p.ri.match(kind, bs, be, score))
	p.starts = append(p.starts, bs)
}

var piiContext = map[string][]string{
	PIIEmail:      {"email"},
	PIIPhone:      {"phone", "number", "telephone", "cell", "cellphone", "mobile", "call"},
	PIICreditCard: {"credit", "card", "visa", "mastercard", "cc ", "amex", "discover", "jcb", "diners", "maestro", "instapayment"},
	PIIIBAN:       {"iban", "bank", "transaction"},
	PIIIP:         {"ip", "ipv4", "ipv6"},
	PIIUSSSN:      {"social", "security", "ssn", "ssns", "ssid"},
	PIIURL:        {"url", "website", "link"},
}

// enhance applies presidio's context boost to findings below the maximum.
func (p *piiScan) enhance() {
	if len(p.found) == 0 {
		return
	}
	p.kw = keywords(p.s)
	for i := range p.found {
		m := &p.found[i]
		if m.Score >= 1 {
			continue
		}
		ctx := piiContext[m.Kind]
		if len(ctx) == 0 {
			continue
		}
		if p.hasContext(p.starts[i], ctx) {
			m.Score += piiContextFactor
			if m.Score < piiContextMinScore {
				m.Score = piiContextMinScore
			}
			if m.Score > 1 {
				m.Score = 1
			}
		}
	}
}

func (p *piiScan) hasContext(start int, ctx []string) bool {
	// the keywords that start before the finding, last five
	j := sort.Search(len(p.kw), func(i int) bool { return p.kw[i].start >= start })
	for k := j - 1; k >= 0 && k >= j-piiContextPrefix; k-- {
		for _, c := range ctx {
			if strings.Contains(p.kw[k].word, c) {
				return true
			}
		}
	}
	return false
}

// keywords splits s into lower-cased words, dropping stop words, the way
// presidio's keyword list (spaCy lemmas without stop words and punctuation)
// is used for context. Lemmatisation is approximated by the substring test
// presidio applies anyway.
func keywords(s string) []keyword {
	var out []keyword
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			i += w
			continue
		}
		j := i
		for j < len(s) {
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r2) {
				break
			}
			j += w2
		}
		word := strings.ToLower(s[i:j])
		if !stopWords[word] {
			out = append(out, keyword{start: i, word: word})
		}
		i = j
	}
	return out
}

// stopWords is a subset of spaCy's English stop words (the ones that matter
// for presidio's context words, such as "call", are included).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all almost alone along already also although always am among an and another any anyhow anyone anything anyway anywhere are around as at back be became because become becomes been before beforehand behind being below beside besides between beyond both bottom but by call can cannot could did do does doing done down due during each either else elsewhere empty enough even ever every everyone everything everywhere except few first for former formerly from front full further get give go had has have he hence her here hereby herein hers herself him himself his how however i if in indeed into is it its itself just keep last latter least less made make many may me meanwhile might mine more moreover most mostly move much must my myself name namely neither never nevertheless next no nobody none noone nor not nothing now nowhere of off often on once one only onto or other others otherwise our ours ourselves out over own part per perhaps please put quite rather re really regarding same say see seem seemed seeming seems serious several she should show side since so some somehow someone something sometime sometimes somewhere still such take than that the their them themselves then there thereafter thereby therefore therein these they third this those though through throughout thru thus to together too top toward towards under unless until up upon us used using various very via was we well were what whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever whole whom whose why will with within without would yet you your yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()

// removeDuplicates is presidio's EntityRecognizer.remove_duplicates: keep the
// best-scoring findings and drop those contained in a kept finding of the
// same entity. It runs in O(n log n): each entity's findings are swept by
// start, and a finding is dropped when the widest finding seen so far
// contains it and ranks before it.
func removeDuplicates(ms []Match) []Match {
	sorted := make([]Match, 0, len(ms))
	for _, m := range ms {
		if m.Score > 0 {
			sorted = append(sorted, m)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End
		}
		return a.Score > b.Score
	})
	var out []Match
	var cover *Match
	for i := range sorted {
		m := sorted[i]
		if cover != nil && cover.Kind == m.Kind && cover.End >= m.End && !piiBefore(m, *cover) {
			continue
		}
		out = append(out, m)
		if cover == nil || cover.Kind != m.Kind || m.End > cover.End {
			cover = &sorted[i]
		}
	}
	return out
}

func piiBefore(a, b Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Start != b.Start {
		return a.Start < b.Start
	}
	return a.End-a.Start > b.End-b.Start
}

// --- e-mail

const emailSpecial = "!#$%&'*+\\-/=?^_`{|}~"

var emailRe = lazyRegexp(`\b((([` + emailSpecial + `\p{L}\p{N}_])|([` + emailSpecial + `\p{L}\p{N}_][` + emailSpecial + `.\p{L}\p{N}_]*[` + emailSpecial + `\p{L}\p{N}_]))@[\p{L}\p{N}_]+(?:-+[\p{L}\p{N}_]+)*(?:\.[\p{L}\p{N}_]+(?:-+[\p{L}\p{N}_]+)*)+)\b`)

// emails runs the e-mail pattern on the whitespace-separated fields that
// contain an '@' only: a match cannot span whitespace, and whitespace is a
// non-word character, so \b behaves at a field's edges as in the full text.
func (p *piiScan) emails() {
	s := p.s
	for off := 0; off < len(s); {
		at := strings.IndexByte(s[off:], '@')
		if at < 0 {
			break
		}
		at += off
		start := at
		for start > off {
			r, w := utf8.DecodeLastRuneInString(s[:start])
			if unicode.IsSpace(r) {
				break
			}
			start -= w
		}
		end := at + 1
		for end < len(s) {
			r, w := utf8.DecodeRuneInString(s[end:])
			if unicode.IsSpace(r) {
				break
			}
			end += w
		}
		field := s[start:end]
		for _, loc := range emailRe.get().FindAllStringIndex(field, -1) {
			addr := field[loc[0]:loc[1]]
			a := strings.LastIndexByte(addr, '@')
			if a < 0 || !validDomain(addr[a+1:]) {
				continue
			}
			p.add(PIIEmail, start+loc[0], start+loc[1], 1)
		}
		off = end
	}
}

// validDomain approximates tldextract's "fqdn is not empty": the domain ends
// in a public suffix and has a label before it.
func validDomain(d string) bool {
	d = strings.ToLower(strings.TrimSuffix(d, "."))
	if d == "" {
		return false
	}
	suffix, icann := publicsuffix.PublicSuffix(d)
	if !icann && !strings.Contains(suffix, ".") {
		return false // unlisted top-level domain
	}
	if !icann {
		// a private suffix: tldextract without private domains treats it
		// as a registrable domain under its ICANN part
		return true
	}
	return len(d) > len(suffix) && d[len(d)-len(suffix)-1] == '.'
}

// --- credit cards

var creditCardRe = lazyRegexp(`\b((4\d{3})|(5[0-5]\d{2})|(6\d{3})|(1\d{3})|(3\d{3}))[- ]?(\d{3,4})[- ]?(\d{3,4})[- ]?(\d{3,5})\b`)

func (p *piiScan) creditCards() {
	for _, loc := range creditCardRe.get().FindAllStringIndex(p.s, -1) {
		v := p.s[loc[0]:loc[1]]
		// presidio's (?!1\d{12}(?!\d)): no 13-digit number starting with 1
		if len(v) == 13 && v[0] == '1' && isAllDigits(v) {
			continue
		}
		if Luhn(v) {
			p.add(PIICreditCard, loc[0], loc[1], 1)
		}
	}
}

// Luhn reports whether the digits of s (ignoring spaces and dashes) pass the
// Luhn checksum. Any other character fails.
func Luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c == ' ' || c == '-' {
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if n%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n > 0 && sum%10 == 0
}

// --- IBAN

// ibanLengths is the IBAN length of each country in the SWIFT registry.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
	"BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
	"DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
	"GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
	"IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
	"LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
	"SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
	"TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// ValidIBAN reports whether s (spaces and dashes ignored) is an IBAN with a
// registered country, that country's length and a valid mod-97 checksum.
func ValidIBAN(s string) bool {
	v := strings.NewReplacer(" ", "", "-", "").Replace(s)
	if len(v) < 5 {
		return false
	}
	n, ok := ibanLengths[v[:2]]
	if !ok || n != len(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	if v[2] < '0' || v[2] > '9' || v[3] < '0' || v[3] > '9' {
		return false
	}
	r := v[4:] + v[:4]
	var num strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c >= 'A' && c <= 'Z' {
			num.WriteString(itoa(int(c-'A') + 10))
		} else {
			num.WriteByte(c)
		}
	}
	b, ok := new(big.Int).SetString(num.String(), 10)
	if !ok {
		return false
	}
	return new(big.Int).Mod(b, big.NewInt(97)).Int64() == 1
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func isUpperAlnum(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' }

// ibanGroup matches "[ -]?[A-Z0-9]{min..max}" at i greedily (separator first,
// count from max down), returning the possible ends in preference order.
func ibanGroup(s string, i, min, max int) []int {
	var ends []int
	try := func(j int) {
		n := 0
		for n < max && j+n < len(s) && isUpperAlnum(s[j+n]) {
			n++
		}
		for k := n; k >= min; k-- {
			ends = append(ends, j+k)
		}
	}
	if i < len(s) && (s[i] == ' ' || s[i] == '-') {
		try(i + 1)
	}
	try(i)
	return ends
}

// ibans emulates presidio's IBAN pattern (with its look-behind and
// look-ahead) and its fallback over the three capture groups.
func (p *piiScan) ibans() {
	s := p.s
	for i := 0; i+4 <= len(s); i++ {
		if !(isUpperASCII(s[i]) && isUpperASCII(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3])) {
			continue
		}
		if i > 0 && isUpperAlnum(s[i-1]) {
			continue
		}
		g1, g2, g3, ok := ibanMatch(s, i)
		if !ok {
			continue
		}
		for _, end := range []int{g3, g2, g1} {
			if ValidIBAN(s[i:end]) {
				p.add(PIIIBAN, i, end, 1)
				break
			}
		}
		i = g3 - 1
	}
}

// ibanMatch finds the match the backtracking engine would pick at i: group 1
// with 2..6 groups of four (greedy), optional group 2 of four, optional
// group 3 of one to three, not followed by [A-Z0-9].
func ibanMatch(s string, i int) (g1, g2, g3 int, ok bool) {
	// deterministic: each group of exactly four has at most one way
	var g1ends []int
	pos := i + 4
	for k := 0; k < 6; k++ {
		next := -1
		for _, e := range ibanGroup(s, pos, 4, 4) {
			next = e
			break
		}
		if next < 0 {
			break
		}
		pos = next
		g1ends = append(g1ends, pos)
	}
	for k := len(g1ends) - 1; k >= 1; k-- { // at least 2 groups
		e1 := g1ends[k]
		opt2 := append(ibanGroup(s, e1, 4, 4), e1)
		for _, e2 := range opt2 {
			opt3 := append(ibanGroup(s, e2, 1, 3), e2)
			for _, e3 := range opt3 {
				if e3 >= len(s) || !isUpperAlnum(s[e3]) {
					return e1, e2, e3, true
				}
			}
		}
	}
	return 0, 0, 0, false
}

func isUpperASCII(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// --- IP addresses

var ipv4Re = lazyRegexp(`\b(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\b`)

const h4 = `[0-9A-Fa-f]{1,4}`

var ipv6Re = lazyRegexp(`^(?:(?:` + h4 + `:){7}` + h4 + `|(?:` + h4 + `:){1,7}:|:(?::` + h4 + `){1,7}|(?:` + h4 + `:){1,6}:` + h4 + `|(?:` + h4 + `:){1,5}(?::` + h4 + `){1,2}|(?:` + h4 + `:){1,4}(?::` + h4 + `){1,3}|(?:` + h4 + `:){1,3}(?::` + h4 + `){1,4}|(?:` + h4 + `:){1,2}(?::` + h4 + `){1,5}|` + h4 + `:(?::` + h4 + `){1,6}|:(?::` + h4 + `){1,6})$`)

const v4oct = `(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)`

var ipv4MappedRe = lazyRegexp(`^::(?:ffff(?::0{1,4})?:)(?:` + v4oct + `\.){3}` + v4oct + `$`)
var ipv4EmbeddedRe = lazyRegexp(`^(?:` + h4 + `:){1,4}:(?:` + h4 + `:){0,4}(?:` + v4oct + `\.){3}` + v4oct + `$`)

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (p *piiScan) ips() {
	s := p.s
	for _, loc := range ipv4Re.get().FindAllStringIndex(s, -1) {
		if _, err := netip.ParseAddr(s[loc[0]:loc[1]]); err == nil {
			p.add(PIIIP, loc[0], loc[1], 0.6)
		}
	}
	// IPv6 (and IPv4-mapped/embedded): the patterns are bounded by
	// (?<![\w:]) and (?![0-9A-Fa-f:.]), so a candidate is a whole run of
	// hex digits and colons (plus dots for the embedded forms).
	for i := 0; i < len(s); {
		c := s[i]
		if !(isHexByte(c) || c == ':') {
			i++
			continue
		}
		if i > 0 {
			if r, _ := utf8.DecodeLastRuneInString(s[:i]); r == ':' || isWordRune(r) {
				i++
				continue
			}
		}
		j := i
		for j < len(s) && (isHexByte(s[j]) || s[j] == ':') {
			j++
		}
		k := j
		for k < len(s) && (isHexByte(s[k]) || s[k] == ':' || s[k] == '.') {
			k++
		}
		if k > j {
			// a run with dots: try the embedded forms, ending at a \b
			run := strings.TrimRight(s[i:k], ".")
			if ipv4MappedRe.get().MatchString(strings.ToLower(run)) || ipv4EmbeddedRe.get().MatchString(run) {
				if _, err := netip.ParseAddr(run); err == nil {
					p.add(PIIIP, i, i+len(run), 0.6)
				}
			}
		} else if run := s[i:j]; strings.Contains(run, ":") && ipv6Re.get().MatchString(run) {
			if _, err := netip.ParseAddr(run); err == nil {
				p.add(PIIIP, i, j, 0.6)
			}
		}
		if k == i {
			k = i + 1
		}
		i = k
	}
}

// --- US SSN

var ssnRe = lazyRegexp(`\b([0-9]{3})[- .]([0-9]{2})[- .]([0-9]{4})\b`)

func (p *piiScan) ssns() {
	// presidio's other SSN patterns score 0.05 and cannot pass the
	// threshold even with context; only this one (0.5) can.
	for _, loc := range ssnRe.get().FindAllStringIndex(p.s, -1) {
		if !ssnInvalid(p.s[loc[0]:loc[1]]) {
			p.add(PIIUSSSN, loc[0], loc[1], 0.5)
		}
	}
}

func ssnInvalid(v string) bool {
	delims := map[byte]bool{}
	var digits []byte
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '.' || c == '-' || c == ' ':
			delims[c] = true
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		}
	}
	if len(delims) > 1 || len(digits) != 9 {
		return true
	}
	d := string(digits)
	if strings.Count(d, d[:1]) == len(d) {
		return true
	}
	if d[3:5] == "00" || d[5:] == "0000" {
		return true
	}
	for _, bad := range []string{"000", "666", "123456789", "98765432", "078051120"} {
		if strings.HasPrefix(d, bad) {
			return true
		}
	}
	return false
}

// --- phone numbers

var phoneCandRe = lazyRegexp(`\+?\(?[0-9][0-9()\-. \t]*[0-9]`)

func (p *piiScan) phones() {
	s := p.s
	for _, loc := range phoneCandRe.get().FindAllStringIndex(s, -1) {
		bs, be := loc[0], loc[1]
		if bs > 0 {
			if r, _ := utf8.DecodeLastRuneInString(s[:bs]); isWordRune(r) {
				continue
			}
		}
		if be < len(s) {
			if r, _ := utf8.DecodeRuneInString(s[be:]); isWordRune(r) {
				continue
			}
		}
		if plausiblePhone(s[bs:be]) {
			p.add(PIIPhone, bs, be, 0.4)
		}
	}
}

var dateLikeRe = lazyRegexp(`^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})$`)

// plausiblePhone accepts what libphonenumber would likely find valid in one
// of presidio's default regions (US, UK, DE, FR, IL, IN, CA, BR).
func plausiblePhone(v string) bool {
	if dateLikeRe.get().MatchString(v) {
		return false
	}
	var digits []byte
	seps, run := 0, 0
	opens, closes := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			run = 0
		case c == '(':
			opens++
		case c == ')':
			closes++
		default:
			if c != '+' {
				seps++
				run++
				if run > 2 {
					return false
				}
			}
		}
	}
	if opens != closes || opens > 1 {
		return false
	}
	n := len(digits)
	if n < 7 || n > 15 {
		return false
	}
	// a plain decimal number such as 3.14159265
	if strings.Count(v, ".") == 1 && seps == 1 && !strings.ContainsAny(v, " -()+") {
		return false
	}
	d := string(digits)
	if strings.HasPrefix(v, "+") {
		return n >= 8 && d[0] != '0'
	}
	if strings.HasPrefix(d, "00") {
		return n >= 10 // international prefix
	}
	nanp := d
	if n == 11 && d[0] == '1' {
		nanp = d[1:]
	}
	if len(nanp) == 10 && nanp[0] >= '2' && nanp[3] >= '2' {
		return true
	}
	if d[0] == '0' && n >= 9 && n <= 12 {
		return true
	}
	if n == 10 && d[0] >= '6' {
		return true // Indian mobile numbers
	}
	return false
}

// --- URLs

func (p *piiScan) urls() {
	for _, u := range findURLs(p.s) {
		p.add(PIIURL, u.start, u.end, u.score)
	}
}

type urlHit struct {
	start, end int
	score      float64
}

// findURLs emulates presidio's four URL patterns: with a scheme (0.6),
// without (0.5), and their quoted variants, whose span includes the quotes.
func findURLs(s string) []urlHit {
	var out []urlHit
	lower := asciiLower(s) // same length as s: offsets into lower are offsets into s
	// Standard URL: https?:// then the host.
	for i := 0; i < len(lower); {
		k := strings.Index(lower[i:], "http")
		if k < 0 {
			break
		}
		k += i
		h := k + 4
		if h < len(lower) && lower[h] == 's' {
			h++
		}
		if strings.HasPrefix(lower[h:], "://") {
			if end, ok := urlHostAt(lower, h+3); ok {
				e := urlPath(s, end)
				out = append(out, urlHit{k, e, 0.6})
				i = e
				continue
			}
		}
		i = k + 1
	}
	// Non-schema URL: the leftmost host anywhere, run by run.
	for i := 0; i < len(lower); {
		if !isHostByte(lower[i]) {
			i++
			continue
		}
		runEnd := i
		for runEnd < len(lower) && isHostByte(lower[runEnd]) {
			runEnd++
		}
		var dots []int // dots followed by a listed TLD label, ascending
		for d := i + 1; d < runEnd; d++ {
			if lower[d] == '.' {
				if _, ok := tldLabel(lower, d+1); ok {
					dots = append(dots, d)
				}
			}
		}
		start := i
		next := runEnd
		for len(dots) > 0 {
			// drop dots not after start
			for len(dots) > 0 && dots[0] <= start {
				dots = dots[1:]
			}
			if len(dots) == 0 {
				break
			}
			if dots[0]-start > 253 {
				start = dots[0] - 253
				continue
			}
			best := 0
			for k := range dots {
				if dots[k]-start <= 253 {
					best = k
				}
			}
			labelEnd, _ := tldLabel(lower, dots[best]+1)
			e := urlPath(s, labelEnd)
			out = append(out, urlHit{start, e, 0.5})
			if e >= runEnd {
				next = e
				break
			}
			start = e
			if !isHostByte(lower[start]) {
				next = start
				break
			}
		}
		if next <= i {
			next = i + 1
		}
		i = next
	}
	// Quoted variants.
	for i := 0; i < len(s); i++ {
		q := s[i]
		if q != '"' && q != '\'' {
			continue
		}
		start := i + 1
		score := 0.5
		if strings.HasPrefix(lower[start:], "http://") {
			start += 7
			score = 0.6
		} else if strings.HasPrefix(lower[start:], "https://") {
			start += 8
			score = 0.6
		}
		if start < len(lower) && isHostByte(lower[start]) {
			if end, ok := urlHostAt(lower, start); ok {
				e := urlPath(s, end)
				if e < len(s) && (s[e] == '"' || s[e] == '\'') {
					out = append(out, urlHit{i, e + 1, score})
				}
			}
		}
	}
	return out
}

func isHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// tldLabel reports whether the label starting at p (up to the next character
// outside [a-z0-9-]) is a listed top-level domain, and where it ends.
func tldLabel(lower string, p int) (int, bool) {
	e := p
	for e < len(lower) && e-p <= 24 && (lower[e] >= 'a' && lower[e] <= 'z' || lower[e] >= '0' && lower[e] <= '9' || lower[e] == '-') {
		e++
	}
	if e-p > 24 || !urlTLDs[lower[p:e]] {
		return 0, false
	}
	return e, true
}

// urlHostAt matches "[a-z0-9.\-]{1,253}[.]TLD(?![a-z0-9-])" at i (lower-case
// input) as the backtracking engine would: the last dot within reach after
// which a listed top-level domain fills the label.
func urlHostAt(lower string, i int) (int, bool) {
	j := i
	for j < len(lower) && j <= i+253 && isHostByte(lower[j]) {
		j++
	}
	for d := j - 1; d > i; d-- {
		if lower[d] != '.' {
			continue
		}
		if e, ok := tldLabel(lower, d+1); ok {
			return e, true
		}
	}
	return 0, false
}

// urlPath extends a URL over "(?:/[^\s()<>\"']*)?".
func urlPath(s string, end int) int {
	if end >= len(s) || s[end] != '/' {
		return end
	}
	i := end + 1
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) || strings.ContainsRune(`()<>"'`, r) {
			break
		}
		i += w
	}
	return i
}

// urlTLDs are the top-level domains presidio's URL pattern lists.
var urlTLDs = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range strings.Fields(`com edu gov int mil net onl org pro red tel uno xxx academy accountant accountants actor adult africa agency airforce apartments app archi army art asia associates attorney auction audio auto autos baby band bar bargains beer berlin best bet bid bike bio black blackfriday blog blue boats bond boo boston bot boutique build builders business buzz cab cafe cam camera camp capital car cards care careers cars casa cash casino catering center ceo cfd charity chat cheap christmas church city claims cleaning click clinic clothing cloud club codes coffee college community company computer condos construction consulting contact contractors cooking cool coupons courses credit creditcard cricket cruises cyou dad dance date dating day degree delivery democrat dental dentist desi design dev diamonds diet digital direct directory discount doctor dog domains download earth eco education email energy engineer engineering enterprises equipment esq estate events exchange expert exposed express fail faith family fans farm fashion feedback film finance financial fish fishing fit fitness flights florist flowers football forsale foundation fun fund furniture futbol fyi gallery game games garden gay gdn gifts gives giving glass global gmbh gold golf graphics gratis green gripe group guide guitars guru hair hamburg haus health healthcare help hiphop hockey holdings holiday homes horse hospital host hosting house how icu info ink institute insure international investments irish jewelry jetzt juegos kaufen kids kitchen kiwi krd kyoto land lat law lawyer lease legal lgbt life lighting limited limo link live loan loans lol london love ltd ltda luxury maison management market marketing markets mba media melbourne meme memorial men miami mobi moda moe mom money monster mortgage motorcycles mov movie nagoya name navy network new news ngo ninja now nyc observer okinawa one ong online organic osaka page paris partners parts party pet phd photo photography photos pics pictures pink pizza place plumbing plus poker porn press productions prof promo properties property protection pub quest racing recipes rehab reise reisen rent rentals repair report republican rest restaurant review reviews rip rocks rodeo rsvp run saarland sale salon sarl sbs school schule science services sex sexy sh shoes shop shopping show singles site skin soccer social software solar solutions soy space spiegel study style sucks supply support surf surgery systems tax taxi team tech technology theater tips tires today tools top tours town toys trade training tube uk university vacations ventures vet video villas vin vip vision vlaanderen vodka vote voting voyage wales wang watch webcam website wedding wiki wine work works world wtf xyz yoga yokohama you zone ac ad ae af ag ai al am an ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bm bn bo br bs bt bv bw by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg er es et eu fi fj fk fm fo fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw sa sb sc sd se sg si sj sk sl sm sn so sr st su sv sx sy sz tc td tf tg th tj tk tl tm tn to tp tr tt tv tw tz ua ug us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw`) {
		m[t] = true
	}
	return m
}()

// asciiLower lower-cases the ASCII letters of s and keeps every other byte,
// so that byte offsets stay valid in s (strings.ToLower replaces invalid
// UTF-8 and changes the length of some letters, such as U+0130).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
