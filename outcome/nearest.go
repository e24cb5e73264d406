package outcome

// Nearest is the name of names a person most likely meant by given, a
// misspelling of it ("" when none is near enough to suggest): at most a
// third of given's letters (and at least one) edited, the first of the
// nearest in names' order.
func Nearest(given string, names []string) string {
	best, bestD := "", max(1, len(given)/3)+1
	for _, n := range names {
		if d := EditDistance(given, n); d < bestD && n != given {
			best, bestD = n, d
		}
	}
	return best
}

// EditDistance counts the single-character edits (insert, delete,
// replace, swap two neighbours) that turn a into b.
func EditDistance(a, b string) int {
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
