// Package nearest finds what a user most likely meant by a name that is
// not known: the "did you mean" of configuration keys and resource names.
package nearest

// Names returns the candidates nearest to word by Distance, in the
// order given, or nil when none is near: a candidate counts when it is
// at most max(1, len(candidate)/4) edits away, so "porject" finds
// "project" but "nosuch" finds nothing among "heavy" and "run".
func Names(word string, candidates []string) []string {
	var best []string
	bestDist := 0
	for _, c := range candidates {
		d := Distance(word, c)
		if d > max(1, len(c)/4) {
			continue
		}
		switch {
		case best == nil || d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	return best
}

// Distance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes each count 1, so "porject" is 1 from "project".
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
