package generate

import "strings"

// withArticle returns word preceded by "a", or by "an" when it starts with
// a vowel sound, for the doc comments that call a wrapper "an Accounts".
// Spelling only approximates sound: a vowel letter means "an", except for
// the common English beginnings read with a consonant sound ("a User",
// "a Unit", "a Euro", "a OneTime"); names that still read oddly are rare
// and only cosmetic.
func withArticle(word string) string {
	lower := strings.ToLower(word)
	for _, p := range []string{"us", "uti", "eu", "one"} {
		if strings.HasPrefix(lower, p) {
			return "a " + word
		}
	}
	if strings.HasPrefix(lower, "uni") && !strings.HasPrefix(lower, "unin") {
		return "a " + word // Unit, Unique, but an Uninstaller
	}
	if word != "" && strings.ContainsRune("aeiou", rune(lower[0])) {
		return "an " + word
	}
	return "a " + word
}
