package detectors

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"
)

// Secret kinds. The first four are the families Invariant's secrets detector
// reports, with its patterns (taken from detect-secrets); the others are
// further detect-secrets plugins, under names in the same style.
const (
	SecretGitHubToken      = "GITHUB_TOKEN"
	SecretAWSAccessKey     = "AWS_ACCESS_KEY"
	SecretAzureStorageKey  = "AZURE_STORAGE_KEY"
	SecretSlackToken       = "SLACK_TOKEN"
	SecretPrivateKey       = "PRIVATE_KEY"
	SecretJWT              = "JWT_TOKEN"
	SecretStripeKey        = "STRIPE_KEY"
	SecretSendGridKey      = "SENDGRID_KEY"
	SecretOpenAIKey        = "OPENAI_KEY"
	SecretGitLabToken      = "GITLAB_TOKEN"
	SecretPyPIToken        = "PYPI_TOKEN"
	SecretNPMToken         = "NPM_TOKEN"
	SecretTwilioKey        = "TWILIO_KEY"
	SecretMailchimpKey     = "MAILCHIMP_KEY"
	SecretDiscordBotToken  = "DISCORD_BOT_TOKEN"
	SecretSquareOAuth      = "SQUARE_OAUTH_SECRET"
	SecretTelegramBotToken = "TELEGRAM_BOT_TOKEN"
	SecretBasicAuth        = "BASIC_AUTH_CREDENTIALS"
	SecretBase64Entropy    = "BASE64_HIGH_ENTROPY_STRING"
	SecretHexEntropy       = "HEX_HIGH_ENTROPY_STRING"
)

// Entropy limits of detect-secrets' high-entropy plugins: a quoted string is
// reported when its Shannon entropy is strictly above the limit.
const (
	Base64EntropyLimit = 4.5
	HexEntropyLimit    = 3.0
)

// InvariantSecretKinds are the kinds Invariant's secrets() reports.
var InvariantSecretKinds = []string{SecretGitHubToken, SecretAWSAccessKey, SecretAzureStorageKey, SecretSlackToken}

// DefaultSecretKinds are scanned when Secrets is given no kinds: every
// pattern family, but not the high-entropy heuristics, which flag quoted
// hashes and identifiers that agent traces are full of. Ask for them by name.
var DefaultSecretKinds = []string{
	SecretGitHubToken, SecretAWSAccessKey, SecretAzureStorageKey, SecretSlackToken,
	SecretPrivateKey, SecretJWT, SecretStripeKey, SecretSendGridKey, SecretOpenAIKey,
	SecretGitLabToken, SecretPyPIToken, SecretNPMToken, SecretTwilioKey, SecretMailchimpKey,
	SecretDiscordBotToken, SecretSquareOAuth, SecretTelegramBotToken, SecretBasicAuth,
}

// SecretKinds lists every kind Secrets knows, in scanning order.
var SecretKinds = append(append([]string(nil), DefaultSecretKinds...), SecretBase64Entropy, SecretHexEntropy)

var knownSecretKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range SecretKinds {
		m[k] = true
	}
	return m
}()

type secretFamily struct {
	kind     string
	patterns []*lazyRE
	// need lists substrings one of which a match must contain (any case
	// when fold is set); the patterns are not run on a text without them.
	need []string
	fold bool
	// find replaces the patterns for families that need more than a regexp.
	find func(s string, ri *runeIndex, kind string) []Match
}

var secretFamilies = []secretFamily{
	{kind: SecretGitHubToken, need: []string{"gh"}, patterns: res(`(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}`)},
	{kind: SecretAWSAccessKey, need: []string{"A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws"}, fold: true, patterns: res(
		`(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}`,
		`(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['"]([0-9a-zA-Z/+]{40})['"]`,
	)},
	{kind: SecretAzureStorageKey, need: []string{"AccountKey="}, patterns: res(`AccountKey=[a-zA-Z0-9+/=]{88}`)},
	{kind: SecretSlackToken, need: []string{"xox", "hooks.slack.com"}, fold: true, patterns: res(
		`(?i)xox(?:a|b|p|o|s|r)-(?:\p{Nd}+-)+[a-z0-9]+`,
		`(?i)https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+`,
	)},
	{kind: SecretPrivateKey, need: []string{"PRIVATE KEY", "PuTTY-User-Key-File-2"}, patterns: res(
		`BEGIN(?: DSA | EC | OPENSSH | PGP | RSA | SSH2 ENCRYPTED | )PRIVATE KEY-*(?:[A-Za-z0-9+/\\\n]*={0,3})?(?:\n*-*END)?`,
		`PuTTY-User-Key-File-2`,
	)},
	{kind: SecretJWT, find: findJWT},
	{kind: SecretStripeKey, need: []string{"k_live_"}, patterns: res(`(?:r|s)k_live_[0-9a-zA-Z]{24}`)},
	{kind: SecretSendGridKey, need: []string{"SG."}, patterns: res(`SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}`)},
	{kind: SecretOpenAIKey, need: []string{"T3BlbkFJ"}, patterns: res(`sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}`)},
	{kind: SecretGitLabToken, find: findGitLab},
	{kind: SecretPyPIToken, need: []string{"pypi-"}, patterns: res(
		`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{70,}`,
		`pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9_-]{70,}`,
	)},
	{kind: SecretNPMToken, need: []string{"/:_auth"}, patterns: res(
		`//.+/:_authToken=\s*[A-Za-z0-9_-]+.*`,
		`//.+/:_auth=\s*[A-Za-z0-9+/=]+.*`,
	)},
	{kind: SecretTwilioKey, need: []string{"AC", "SK"}, patterns: res(`AC[a-z0-9]{32}`, `SK[a-z0-9]{32}`)},
	{kind: SecretMailchimpKey, need: []string{"-us"}, patterns: res(`[0-9a-z]{32}-us[0-9]{1,2}`)},
	{kind: SecretDiscordBotToken, need: []string{"."}, patterns: res(`[MN][a-zA-Z0-9_-]{23}\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}`)},
	{kind: SecretSquareOAuth, need: []string{"sq0csp-"}, patterns: res(`sq0csp-[0-9A-Za-z\\_-]{43}`)},
	{kind: SecretTelegramBotToken, need: []string{":"}, patterns: res(`[0-9]{8,10}:[0-9A-Za-z_-]{35}`)},
	{kind: SecretBasicAuth, need: []string{"://"}, patterns: res(`://[^{}\s]+:([^{}\s]+)@`)},
	{kind: SecretBase64Entropy, find: func(s string, ri *runeIndex, kind string) []Match {
		return findHighEntropy(s, ri, kind, base64Charset, Base64EntropyLimit, false)
	}},
	{kind: SecretHexEntropy, find: func(s string, ri *runeIndex, kind string) []Match {
		return findHighEntropy(s, ri, kind, hexCharset, HexEntropyLimit, true)
	}},
}

func res(patterns ...string) []*lazyRE {
	out := make([]*lazyRE, len(patterns))
	for i, p := range patterns {
		out[i] = lazyRegexp(p)
	}
	return out
}

// Secrets finds secrets in text.
//
// kinds selects the families to report (names as in SecretKinds); an empty
// kinds scans DefaultSecretKinds. An unknown name is an error wrapping
// ErrUnknownKind.
//
// Matches come family by family in SecretKinds order, and by position within
// a family, as Invariant's detector lists them; overlapping findings of
// different patterns are all reported. Invariant's secrets(x) is the list of
// the Kinds of these matches (with repetitions).
//
// The patterns are detect-secrets' (Invariant's for its four families). The
// high-entropy families scan quoted strings ('...' or "...") over the base64
// (limit 4.5) or hex (limit 3.0) alphabet as detect-secrets does, including
// its penalty for all-digit hex strings, and skip sequential strings
// ("abcdef...", "0123...") as its default heuristic filter does.
func Secrets(text string, kinds []string) ([]Match, error) {
	want, err := kindSet(kinds, knownSecretKinds, "secret kind")
	if err != nil {
		return nil, err
	}
	if want == nil {
		want = map[string]bool{}
		for _, k := range DefaultSecretKinds {
			want[k] = true
		}
	}
	ri := newRuneIndex(text)
	var lower string
	var out []Match
	for _, fam := range secretFamilies {
		if !want[fam.kind] {
			continue
		}
		if len(fam.need) > 0 {
			hay := text
			if fam.fold {
				if lower == "" {
					lower = strings.ToLower(text)
				}
				hay = lower
			}
			found := false
			for _, n := range fam.need {
				if fam.fold {
					n = strings.ToLower(n)
				}
				if strings.Contains(hay, n) {
					found = true
					break
				}
			}
			if !found {
				continue
			}
		}
		if fam.find != nil {
			out = append(out, fam.find(text, ri, fam.kind)...)
			continue
		}
		for _, re := range fam.patterns {
			for _, loc := range re.get().FindAllStringIndex(text, -1) {
				out = append(out, ri.match(fam.kind, loc[0], loc[1], 1))
			}
		}
	}
	return out, nil
}

var jwtRe = lazyRegexp(`eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.?`)
var jwtSigChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/="

// findJWT reports JSON Web Tokens. detect-secrets' pattern ends in a lazy
// signature part, so the token it checks is header.payload[.]; both parts
// must be base64url-encoded JSON. The reported span also covers the
// signature characters that follow, so that masking hides the whole token.
func findJWT(s string, ri *runeIndex, kind string) []Match {
	var out []Match
	for _, loc := range jwtRe.get().FindAllStringIndex(s, -1) {
		if !jwtFormallyValid(s[loc[0]:loc[1]]) {
			continue
		}
		end := loc[1]
		if s[end-1] == '.' {
			for end < len(s) && strings.IndexByte(jwtSigChars, s[end]) >= 0 {
				end++
			}
		}
		out = append(out, ri.match(kind, loc[0], end, 1))
	}
	return out
}

func jwtFormallyValid(token string) bool {
	for i, part := range strings.Split(token, ".") {
		if len(part)%4 == 1 {
			return false
		}
		// Python's urlsafe_b64decode is lenient about '=' padding.
		dec, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
		if err != nil {
			return false
		}
		if i < 2 {
			if !utf8.Valid(dec) || !json.Valid(dec) {
				return false
			}
		}
	}
	return true
}

var gitlabRe = lazyRegexp(`(glpat|gloas|gldt|glrt|glcbt|glptt|glft|glimt|glagent|glsoat)-[A-Za-z0-9_-]{20,50}`)

// findGitLab applies detect-secrets' GitLab pattern, whose trailing (?!\w)
// RE2 cannot express: like the backtracking engine, it takes the longest
// token of 20 to 50 characters that is not followed by a word character.
func findGitLab(s string, ri *runeIndex, kind string) []Match {
	var out []Match
	for _, loc := range gitlabRe.get().FindAllStringIndex(s, -1) {
		tokStart := loc[0] + strings.IndexByte(s[loc[0]:loc[1]], '-') + 1
		for l := loc[1] - tokStart; l >= 20; l-- {
			end := tokStart + l
			if end < len(s) {
				if r, _ := utf8.DecodeRuneInString(s[end:]); isWordRune(r) {
					continue
				}
			}
			out = append(out, ri.match(kind, loc[0], end, 1))
			break
		}
	}
	return out
}

const base64Charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/\\-_="
const hexCharset = "0123456789abcdefABCDEF"

var quotedBase64Re = lazyRegexp(`'[A-Za-z0-9+/\\_=-]+'|"[A-Za-z0-9+/\\_=-]+"`)
var quotedHexRe = lazyRegexp(`'[0-9a-fA-F]+'|"[0-9a-fA-F]+"`)

func findHighEntropy(s string, ri *runeIndex, kind, charset string, limit float64, hex bool) []Match {
	re := quotedBase64Re.get()
	if hex {
		re = quotedHexRe.get()
	}
	var out []Match
	for _, loc := range re.FindAllStringIndex(s, -1) {
		bs, be := loc[0]+1, loc[1]-1
		v := s[bs:be]
		e := ShannonEntropy(v, charset)
		if hex && len(v) > 1 && isAllDigits(v) {
			e -= 1.2 / math.Log2(float64(len(v)))
		}
		if e > limit && !isSequentialString(v) {
			out = append(out, ri.match(kind, bs, be, 1))
		}
	}
	return out
}

// ShannonEntropy is detect-secrets' entropy of data over the characters of
// charset (characters outside charset contribute nothing).
func ShannonEntropy(data, charset string) float64 {
	if data == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(data); i++ {
		counts[data[i]]++
	}
	n := float64(utf8.RuneCountInString(data))
	e := 0.0
	seen := [256]bool{}
	for i := 0; i < len(charset); i++ {
		c := charset[i]
		if seen[c] {
			continue
		}
		seen[c] = true
		if counts[c] > 0 {
			p := float64(counts[c]) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isSequentialString reports strings made of consecutive characters of a
// well-known sequence, detect-secrets' is_sequential_string heuristic.
func isSequentialString(s string) bool {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	seqs := []string{
		alpha + alpha,
		"0123456789" + "0123456789",
		"0123456789ABCDEF" + "0123456789ABCDEF",
		alpha + "0123456789+/" + alpha + "0123456789+/",
		"0123456789" + alpha + "0123456789" + alpha,
	}
	u := strings.ToUpper(s)
	for _, q := range seqs {
		if strings.Contains(q, u) {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return r == '_' || isAlnumRune(r)
}
