package yamltemplate

import (
	"encoding/base32"
	"strings"
)

// A token stands, in a guarded template's output, for the text one action printed: the
// marker, a letter saying how the text was printed (kind), the text in base32 (lower-case,
// unpadded: digits and a to v) and the end mark z. It is made of letters and digits only, so
// that YAML reads it as (part of) one scalar wherever the template put it, and it carries the
// text itself, so that the functions that make it need no state of a run.
const tokenMarker = "q7zscorev"

// kind is how the text a token stands for was printed.
type kind byte

const (
	// printedText is what an action printed (fmt.Sprint of its value).
	printedText kind = 'v'
	// goQuoted is a string quote printed in Go's double quotes (sprig's quote): the token is
	// the content between the quotes.
	goQuoted kind = 'q'
	// singleQuoted is a string squote printed in single quotes (sprig's squote, which escapes
	// nothing): the token is the content between them.
	singleQuoted kind = 's'
	// jsonString is a string inside a JSON text (toJson, and the manifests set's quote): the
	// token is the content between the quotes.
	jsonString kind = 'j'
	// yamlString is a string inside a YAML text (toYaml), where it stands alone.
	yamlString kind = 'y'
)

var encoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// token is the token for text printed as k.
func token(k kind, text string) string {
	return tokenMarker + string(k) + encoding.EncodeToString([]byte(text)) + "z"
}

// tokenOrWord is text printed as k as it is when it is a word (word), else its token: a word
// reads, wherever YAML finds it, as the same text, so it needs none.
func tokenOrWord(k kind, text string) string {
	if word(text) {
		return text
	}
	return token(k, text)
}

// word reports whether text is made only of letters, digits and _ / + = ~, and of - and .
// other than at its start: YAML reads such text as itself (or as the number, boolean or null
// it spells, as it would have read it printed by hand) in every context a template can print
// it into, and it can end no scalar, start no comment, indicator or document, nor hold a token
// marker's end. Most printed values are words (names, hashes, ports, sizes): they cost no
// token.
func word(text string) bool {
	if text == "" {
		return true
	}
	if text[0] == '-' || text[0] == '.' || strings.Contains(text, tokenMarker) {
		return false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_/+=~-.", c) >= 0) {
			return false
		}
	}
	return true
}

// hasToken reports whether s may hold a token.
func hasToken(s string) bool { return strings.Contains(s, tokenMarker) }

// piece is one token found in a text: where it is, how it was printed and its text.
type piece struct {
	start, end int
	kind       kind
	text       string
}

// tokensIn finds the tokens of s, in order.
func tokensIn(s string) ([]piece, error) {
	var out []piece
	for at := 0; ; {
		i := strings.Index(s[at:], tokenMarker)
		if i < 0 {
			return out, nil
		}
		start := at + i
		k := start + len(tokenMarker) // the kind
		end := k + 1
		for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] >= 'a' && s[end] <= 'v') {
			end++
		}
		if k >= len(s) || !strings.ContainsRune("vqsjy", rune(s[k])) || end >= len(s) || s[end] != 'z' {
			return nil, errMangled
		}
		b, err := encoding.DecodeString(s[k+1 : end])
		if err != nil {
			return nil, errMangled
		}
		out = append(out, piece{start: start, end: end + 1, kind: kind(s[k]), text: string(b)})
		at = end + 1
	}
}
