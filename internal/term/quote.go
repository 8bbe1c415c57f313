package term

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Quote returns s as it may be printed to a terminal when s comes from a
// record or another source an operator does not control (a task id, a kind,
// a reason, a topic).
//
// It returns s itself when s is valid UTF-8, every rune is graphic
// (unicode.IsGraphic: letters, marks, numbers, punctuation, symbols and
// spaces) and s does not begin with a double quote. Otherwise it returns s as
// a Go string literal (strconv.QuoteToGraphic): control characters (ESC, CR,
// LF, TAB, the C1 controls), format characters such as the bidi overrides
// (U+202E) and zero-width characters, and invalid bytes become escapes
// ("\x1b[2J", "\r", "\u202e", "\xff"), so that nothing a record holds can
// move the cursor, clear the screen, break a table row or reorder the text
// around it. A printed value that begins with a double quote is therefore
// always such a literal, and strconv.Unquote gives back the original. The
// empty string is returned as is.
func Quote(s string) string {
	if s != "" && s[0] == '"' {
		return strconv.QuoteToGraphic(s)
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return strconv.QuoteToGraphic(s) // an invalid byte
			}
		}
		if !unicode.IsGraphic(r) {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

// EscapeJSON returns the JSON text b with every rune that Quote would escape
// and that encoding/json leaves as it is (DEL and the C1 controls, U+007F to
// U+009F, format characters such as the bidi overrides, private-use and
// unassigned code points) written as a \u escape, so that JSON printed to a
// terminal is as inert as text printed through Quote. The JSON means the
// same: outside strings JSON text is ASCII, and inside a string a \u escape
// stands for its rune. b must be valid UTF-8, as encoding/json writes it; it
// is returned unchanged (not copied) when there is nothing to escape.
func EscapeJSON(b []byte) []byte {
	var out []byte // nil until the first escape
	last := 0      // b[:last] is in out
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		// The ASCII controls but DEL are escaped in strings by
		// encoding/json, and outside strings they are the indentation.
		if (r < utf8.RuneSelf && r != 0x7f) || unicode.IsGraphic(r) || (r == utf8.RuneError && size == 1) {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		out = append(out, b[last:i]...)
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = appendU(appendU(out, r1), r2)
		} else {
			out = appendU(out, r)
		}
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// appendU appends the JSON escape \uXXXX of r, at most U+FFFF.
func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}
