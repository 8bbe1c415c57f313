package dockerfile

import (
	"fmt"
	"strings"
)

// ShellWords splits a shell command line into words at spaces and tabs,
// honouring quotes: '...' and "..." are taken literally (no escapes inside)
// and a backslash takes the next byte literally; a backslash at the end is
// kept. Operators such as && are words of their own when separated by
// spaces. An unterminated quote is an error.
func ShellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", c, s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			i++
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
