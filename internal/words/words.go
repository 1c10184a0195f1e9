// Package words writes counts the way people read them: "1 cluster", "3 clusters".
package words

import "fmt"

// Count is n and the noun, in the plural unless n is 1. Nouns here take a plain "s".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
