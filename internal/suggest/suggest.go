package suggest

import "strings"

// Closest returns the candidate that name was most likely meant to be, or
// "" if none is close: the nearest candidate within an edit distance of
// about a third of name's length (at least 1), or else the only candidate
// that begins with name (of at least 3 characters). Ties go to the first
// candidate.
func Closest(name string, candidates []string) string {
	best, bestDist := "", max(1, len([]rune(name))/3)+1
	var prefixed []string
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist {
			best, bestDist = c, d
		}
		if len(name) >= 3 && strings.HasPrefix(c, name) {
			prefixed = append(prefixed, c)
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
